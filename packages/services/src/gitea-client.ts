// What tests do to a private Gitea through its REST API: users with tokens, repositories with a
// first commit on main, collaborators, and waiting for a push to show.
import { randomBytes } from "node:crypto";
import { waitUntil } from "./wire.ts";

export interface GiteaUser {
  name: string;
  password: string;
  email: string;
  /** An API token of every scope; also the password for git over HTTP. */
  token: string;
}

export interface GiteaRepository {
  owner: string;
  name: string;
  /** `owner/name`. */
  fullName: string;
  /** `http://127.0.0.1:<port>/owner/name.git`, without credentials. */
  cloneUrl: string;
}

export interface GiteaAnswer<T> {
  status: number;
  body: T;
}

export interface RepositoryOptions {
  /** Whose repository it is; default the admin. */
  owner?: GiteaUser;
  /** Files of the first commit on main (path → text), beside a README.md (which they may replace). */
  files?: Record<string, string>;
  private?: boolean;
}

/** A user's access to another user's repository. */
export type GiteaPermission = "read" | "write" | "admin";

/** Requests to one Gitea, as its admin unless told otherwise. */
export class GiteaClient {
  readonly #url: string;
  readonly #admin: GiteaUser;

  constructor(url: string, admin: GiteaUser) {
    this.#url = url;
    this.#admin = admin;
  }

  /** Makes an API token of every scope for a user, authenticated by its password. */
  static async createToken(url: string, name: string, password: string): Promise<string> {
    const response = await fetch(`${url}/api/v1/users/${encodeURIComponent(name)}/tokens`, {
      method: "POST",
      headers: {
        authorization: `Basic ${Buffer.from(`${name}:${password}`).toString("base64")}`,
        "content-type": "application/json",
      },
      body: JSON.stringify({ name: `gadget-${randomBytes(4).toString("hex")}`, scopes: ["all"] }),
    });
    const body = (await response.json()) as { sha1?: string; message?: string };
    if (response.status !== 201 || !body.sha1) {
      throw new Error(`Gitea refused a token for ${name} (${response.status}): ${body.message}`);
    }
    return body.sha1;
  }

  /**
   * A request to the REST API (`path` under /api/v1) with a token (default the admin's); the
   * status and the parsed JSON answer (null when there is none), whatever the status.
   * @example const { status } = await gitea.api("GET", "/user", { token: "wrong" }); // 401
   */
  async api<T = unknown>(
    method: string,
    path: string,
    options: { body?: unknown; token?: string } = {},
  ): Promise<GiteaAnswer<T>> {
    const response = await fetch(`${this.#url}/api/v1${path}`, {
      method,
      headers: {
        authorization: `token ${options.token ?? this.#admin.token}`,
        accept: "application/json",
        ...(options.body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
    });
    const text = await response.text();
    return { status: response.status, body: (text ? JSON.parse(text) : null) as T };
  }

  /** Creates a user (not an admin) with a token of every scope. */
  async createUser(name: string): Promise<GiteaUser> {
    const password = randomBytes(18).toString("base64url");
    const email = `${name}@example.com`;
    await this.#expect(201, "POST", "/admin/users", {
      username: name,
      password,
      email,
      must_change_password: false,
    });
    const token = await GiteaClient.createToken(this.#url, name, password);
    return { name, password, email, token };
  }

  /**
   * Creates a repository whose main branch holds one commit: README.md and `files`. (One commit
   * through the contents API into an empty repository: Gitea's `auto_init` commit and a second
   * one would each cost a push with its hooks, over a second on a busy machine.)
   */
  async createRepository(name: string, options: RepositoryOptions = {}): Promise<GiteaRepository> {
    const owner = options.owner ?? this.#admin;
    await this.#expect(
      201,
      "POST",
      "/user/repos",
      { name, default_branch: "main", private: options.private ?? false },
      owner.token,
    );
    const repository: GiteaRepository = {
      owner: owner.name,
      name,
      fullName: `${owner.name}/${name}`,
      cloneUrl: `${this.#url}/${owner.name}/${name}.git`,
    };
    const files = { "README.md": `# ${name}\n`, ...options.files };
    await this.#expect(
      201,
      "POST",
      `/repos/${repository.fullName}/contents`,
      {
        branch: "main",
        message: "Initial commit",
        files: Object.entries(files).map(([path, text]) => ({
          operation: "create",
          path,
          content: Buffer.from(text).toString("base64"),
        })),
      },
      owner.token,
    );
    return repository;
  }

  /** Gives `user` access to the repository (its owner's token is needed: the admin owns it by default). */
  async addCollaborator(
    repository: GiteaRepository,
    user: GiteaUser,
    permission: GiteaPermission,
  ): Promise<void> {
    await this.#expect(
      204,
      "PUT",
      `/repos/${repository.fullName}/collaborators/${encodeURIComponent(user.name)}`,
      { permission },
    );
  }

  /** The clone URL with `user`'s name and token in it, for git over HTTP. */
  authenticatedUrl(repository: GiteaRepository, user: GiteaUser = this.#admin): string {
    const url = new URL(repository.cloneUrl);
    url.username = user.name;
    url.password = user.token;
    return url.toString();
  }

  /**
   * Waits until Gitea lists `branch` (at commit `sha` when given): Gitea takes a push in after
   * answering it. Resolves with the branch's commit.
   */
  async waitForBranch(
    repository: GiteaRepository,
    branch: string,
    options: { sha?: string; timeoutMs?: number } = {},
  ): Promise<string> {
    let commit = "";
    await waitUntil(
      `branch ${branch} of ${repository.fullName}`,
      async () => {
        const answer = await this.api<{ commit?: { id?: string } }>(
          "GET",
          `/repos/${repository.fullName}/branches/${encodeURIComponent(branch)}`,
        );
        const id = answer.body?.commit?.id;
        if (answer.status !== 200 || !id) throw new Error(`answered ${answer.status}`);
        if (options.sha && id !== options.sha) throw new Error(`still at ${id}`);
        commit = id;
      },
      options.timeoutMs ?? 30_000,
    );
    return commit;
  }

  async #expect(
    status: number,
    method: string,
    path: string,
    body: unknown,
    token?: string,
  ): Promise<void> {
    const answer = await this.api<{ message?: string } | null>(method, path, {
      body,
      ...(token ? { token } : {}),
    });
    if (answer.status !== status) {
      throw new Error(
        `Gitea answered ${method} ${path} with ${answer.status}: ${answer.body?.message ?? ""}`,
      );
    }
  }
}
