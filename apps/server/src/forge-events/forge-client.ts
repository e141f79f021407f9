// What the server itself asks of a project's forge, through the outbound policy with the
// project's token: whether a sender may write to the repository, the one comment that says a
// turn started and, edited, how it ended, and what Gitea's webhooks leave out (a review's line
// comments, the open pull request a commit is the head of). GitHub and Gitea share the calls;
// GitLab has notes.

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

/** Gitea's pages hold this many items at most (its `MAX_RESPONSE_ITEMS` default). */
const pageSize = 50;
/** The states of a review its author submitted (not pending, not a review request). */
const submitted = ["COMMENT", "APPROVED", "REQUEST_CHANGES"];
/** Open pull requests looked through for a commit's: this many pages, newest updated first. */
const pullPages = 4;

/** One line comment of a review: where it points, the diff around it, what it says. */
export interface ReviewLine {
  path: string;
  line: number | null;
  /** Whether `line` is in the old file (a removed line), not the new one. */
  oldSide: boolean;
  hunk: string;
  body: string;
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

  /**
   * The line comments of the review `reviewer` just submitted on pull request `number` (Gitea
   * sends a review's text, not its id nor its lines): the newest of their submitted reviews whose
   * text is `text`, and its comments.
   */
  async reviewLines(
    number: number,
    reviewer: string,
    text: string,
    signal?: AbortSignal,
  ): Promise<ReviewLine[]> {
    const reviews = `${this.repository.apiPath}/pulls/${number}/reviews`;
    let answer = await this.#call("GET", `${reviews}?limit=${pageSize}&page=1`, undefined, signal);
    this.#expect(answer, "list the pull request's reviews");
    // Oldest first, by pages: the newest are on the last one.
    const total = Number(answer.headers.get("x-total-count") ?? 0);
    if (total > pageSize) {
      const last = Math.ceil(total / pageSize);
      answer = await this.#call(
        "GET",
        `${reviews}?limit=${pageSize}&page=${last}`,
        undefined,
        signal,
      );
      this.#expect(answer, "list the pull request's reviews");
    }
    const listed = Array.isArray(answer.json) ? (answer.json as GiteaReview[]) : [];
    const review = listed
      .filter(
        (entry) =>
          entry.user?.login === reviewer &&
          submitted.includes(entry.state ?? "") &&
          (entry.body ?? "").trim() === text.trim(),
      )
      .sort((left, right) => right.id - left.id)[0];
    if (!review) throw new Error(`found no review by @${reviewer} on #${number}`);
    if (!review.comments_count) return [];
    const comments = await this.#call("GET", `${reviews}/${review.id}/comments`, undefined, signal);
    this.#expect(comments, "list the review's comments");
    const lines = Array.isArray(comments.json) ? (comments.json as GiteaReviewComment[]) : [];
    const lineNumber = (value: unknown) =>
      typeof value === "number" && Number.isInteger(value) && value > 0 ? value : null;
    return lines.map((entry) => ({
      path: String(entry.path ?? ""),
      line: lineNumber(entry.position) ?? lineNumber(entry.original_position),
      oldSide: !lineNumber(entry.position) && lineNumber(entry.original_position) !== null,
      hunk: String(entry.diff_hunk ?? ""),
      body: String(entry.body ?? ""),
    }));
  }

  /**
   * The number of the open pull request whose head is `sha`, or null: Gitea's commit status names
   * the commit only. Looks through the most recently updated open pull requests.
   */
  async pullWithHead(sha: string): Promise<{ number: number; url: string } | null> {
    for (let page = 1; page <= pullPages; page++) {
      const answer = await this.#call(
        "GET",
        `${this.repository.apiPath}/pulls?state=open&sort=recentupdate&limit=${pageSize}&page=${page}`,
      );
      this.#expect(answer, "list the open pull requests");
      const pulls = Array.isArray(answer.json) ? (answer.json as GiteaPull[]) : [];
      const found = pulls.find((pull) => pull.head?.sha?.toLowerCase() === sha);
      if (found) return { number: found.number, url: String(found.html_url ?? "") };
      if (pulls.length < pageSize) return null;
    }
    return null;
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
    signal?: AbortSignal,
  ): Promise<{ status: number; json: unknown; headers: Headers }> {
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
      ...(signal ? { signal } : {}),
    });
    const text = await response.text();
    let json: unknown = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = null;
    }
    return { status: response.status, json, headers: response.headers };
  }
}

/** The fields of Gitea's answers read here (its `PullReview`, `PullReviewComment`, `PullRequest`). */
interface GiteaReview {
  id: number;
  user?: { login?: string } | null;
  state?: string;
  body?: string;
  comments_count?: number;
}
interface GiteaReviewComment {
  path?: string;
  body?: string;
  diff_hunk?: string;
  position?: number;
  original_position?: number;
}
interface GiteaPull {
  number: number;
  html_url?: string;
  head?: { sha?: string } | null;
}

export { maxAnswerBytes as forgeAnswerBytes };
