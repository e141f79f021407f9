// What the forge stand-in's two APIs share: an answer as status and JSON body, request bodies read
// within GitHub's and GitLab's size limit and parsed the way each refuses a bad one, and the state
// both APIs act on.
import type { IncomingMessage } from "node:http";

export interface ForgeStandInOptions {
  /** The token each API accepts. */
  token: string;
  /** Repositories that exist: GitHub `owner/repo`, GitLab `group/sub/project`. Others answer 404. */
  repositories: string[];
  /** Whether `branch` exists in `repository` (GitHub refuses a pull request of a missing head). Default: every branch does. */
  branchExists?: (repository: string, branch: string) => boolean;
  /** Answer GitHub's pull list whatever its `head=` filter says, as Gitea does. */
  ignoreHeadFilter?: boolean;
  /** GitHub: each user's permission on every repository (others: `none`). */
  permissions?: Record<string, "admin" | "maintain" | "write" | "read" | "none">;
  /** GitLab: each user id's access level on every project (others: not a member, 404). */
  members?: Record<number, number>;
}

/** A comment (GitLab: note) on an issue or pull request, as the stand-in keeps it. */
export interface StandInComment {
  repository: string;
  /** The or pull request's number (GitLab: iid). */
  number: number;
  id: number;
  body: string;
}

/** A pull request (GitLab: merge request) as the stand-in keeps it. */
export interface StandInPullRequest {
  repository: string;
  number: number;
  title: string;
  body: string;
  head: string;
  base: string;
  state: "open" | "closed";
}

/** What both APIs of one stand-in read and change. */
export interface StandInState {
  options: ForgeStandInOptions;
  /** The stand-in's own address (`http://127.0.0.1:<port>`). */
  url: string;
  pulls: StandInPullRequest[];
  comments: StandInComment[];
  /** The next pull request number of a repository, shared by both kinds as a forge numbers them. */
  nextNumber: (repository: string) => number;
}

const maxBody = 1024 * 1024;
export const githubDocs = "https://docs.github.com/rest/pulls/pulls";

/** A status and JSON body (or `text`, sent as it is), with the headers the forge adds; thrown from deep inside a handler, answered as it is. */
export class Answer {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: Record<string, string> = {},
    readonly text?: string,
  ) {}
}

export async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > maxBody) throw new Answer(413, { message: "Payload Too Large" });
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** A GitHub request body: a JSON object, else GitHub's 400 (documented, no recording found). */
export function githubJson(text: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(text || "{}");
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) {
      return parsed as Record<string, unknown>;
    }
  } catch {
    // Answered below, as GitHub does.
  }
  throw new Answer(400, {
    message: "Problems parsing JSON",
    documentation_url: githubDocs,
    status: "400",
  });
}

/** A GitLab request body: a JSON object, else GitLab's 400 (Grape's words; no recording found). */
export function gitlabJson(text: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(text || "{}");
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) {
      return parsed as Record<string, unknown>;
    }
  } catch {
    // Answered below, as GitLab does.
  }
  throw new Answer(400, { error: "The provided content-type is not supported." });
}
