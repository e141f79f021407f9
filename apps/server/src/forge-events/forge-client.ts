// What the server itself asks of a project's forge, through the outbound policy with the
// project's token: whether a sender may write to the repository, and the one comment that says
// a turn started and, edited, how it ended. GitHub and Gitea share the calls; GitLab has notes.

import type { ForgeSender } from "@gadget/protocol";
import {
  FORGE_NAMES,
  type ForgeRepository,
  forgeRepository,
  SystemError,
  type WorkOrderForge,
} from "@gadget/protocol";

/** A forge's answers are read up to this much. */
const maxAnswerBytes = 256 * 1024;
/** GitLab's Developer role: may push. */
const gitlabDeveloper = 30;

export interface ForgeClientOptions {
  forge: WorkOrderForge;
  gitUrl: string;
  fetch: typeof fetch;
}

/** Where a comment goes: an issue, or a pull request (GitLab: merge request). */
export interface CommentTarget {
  number: number;
  isPullRequest: boolean;
}

/** The project's forge, as the server talks to it. */
export class ForgeClient {
  readonly repository: ForgeRepository;
  readonly #options: ForgeClientOptions;

  constructor(options: ForgeClientOptions) {
    this.#options = options;
    this.repository = forgeRepository(options.forge.kind, options.gitUrl);
  }

  /** Whether `sender` may write to the repository, as the forge says (never as the event says). */
  async canWrite(sender: ForgeSender): Promise<boolean> {
    const { kind } = this.#options.forge;
    if (kind === "gitlab") {
      if (sender.id === null) return false;
      const answer = await this.#call("GET", `${this.repository.apiPath}/members/all/${sender.id}`);
      if (answer.status === 404) return false;
      this.#expect(answer, "read the member's access");
      const level = (answer.json as { access_level?: unknown }).access_level;
      return typeof level === "number" && level >= gitlabDeveloper;
    }
    const answer = await this.#call(
      "GET",
      `${this.repository.apiPath}/collaborators/${encodeURIComponent(sender.login)}/permission`,
    );
    if (answer.status === 404) return false;
    this.#expect(answer, "read the sender's permission");
    const permission = (answer.json as { permission?: unknown }).permission;
    return ["owner", "admin", "maintain", "write"].includes(String(permission));
  }

  /** Why `sender` is not obeyed (no write access, or the forge could not be asked); null when they may write. Never throws. */
  async refusal(sender: ForgeSender): Promise<string | null> {
    try {
      if (await this.canWrite(sender)) return null;
      return `@${sender.login} has no write access to ${this.repository.name}`;
    } catch (error) {
      return `could not ask the forge about @${sender.login}: ${(error as Error).message}`;
    }
  }

  /** Posts a comment; answers its id. */
  async comment(target: CommentTarget, body: string): Promise<number> {
    const answer = await this.#call("POST", this.#notes(target), { body });
    this.#expect(answer, "comment");
    const id = (answer.json as { id?: unknown }).id;
    if (typeof id !== "number") {
      throw new SystemError("forge_failed", `${this.#name} answered a comment without its id`);
    }
    return id;
  }

  /** Replaces a comment's text. */
  async editComment(target: CommentTarget, id: number, body: string): Promise<void> {
    const { kind } = this.#options.forge;
    const answer =
      kind === "gitlab"
        ? await this.#call("PUT", `${this.#notes(target)}/${id}`, { body })
        : await this.#call("PATCH", `${this.repository.apiPath}/issues/comments/${id}`, { body });
    this.#expect(answer, "edit its comment");
  }

  get #name(): string {
    return FORGE_NAMES[this.#options.forge.kind];
  }

  #notes(target: CommentTarget): string {
    if (this.#options.forge.kind !== "gitlab") {
      return `${this.repository.apiPath}/issues/${target.number}/comments`;
    }
    const kind = target.isPullRequest ? "merge_requests" : "issues";
    return `${this.repository.apiPath}/${kind}/${target.number}/notes`;
  }

  #expect(answer: { status: number; json: unknown }, doing: string): void {
    if (answer.status >= 200 && answer.status < 300) return;
    const said = (answer.json as { message?: unknown } | null)?.message;
    throw new SystemError(
      "forge_failed",
      `${this.#name} refused to ${doing} (${answer.status}) for ${this.repository.name}${typeof said === "string" ? `: ${said.slice(0, 200)}` : ""}`,
    );
  }

  async #call(
    method: string,
    path: string,
    body?: object,
  ): Promise<{ status: number; json: unknown }> {
    const { forge } = this.#options;
    const headers: Record<string, string> =
      forge.kind === "gitlab"
        ? { "PRIVATE-TOKEN": forge.token }
        : forge.kind === "gitea"
          ? { Authorization: `token ${forge.token}`, Accept: "application/json" }
          : {
              Authorization: `Bearer ${forge.token}`,
              Accept: "application/vnd.github+json",
              "X-GitHub-Api-Version": "2022-11-28",
            };
    const response = await this.#options.fetch(`${forge.apiUrl.replace(/\/+$/, "")}${path}`, {
      method,
      headers: {
        ...headers,
        "User-Agent": "gadget-code",
        ...(body ? { "Content-Type": "application/json" } : {}),
      },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    const text = await response.text();
    let json: unknown = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = null;
    }
    return { status: response.status, json };
  }
}

export { maxAnswerBytes as forgeAnswerBytes };
