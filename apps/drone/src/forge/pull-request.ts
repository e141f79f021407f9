// Opens a session's pull request (GitLab: merge request) through the forge's REST API once its
// branch is pushed, or updates the one it has. Runs in the drone's own process with the project's
// token: never in a sandboxed command, never seen by the agent. Never throws: a failure is an
// outcome whose `error` says why in words, without the token.
import type { ForgeKind, PullRequestRef, WorkOrderForge } from "@gadget/protocol";
import { ForgeProblem } from "./forge-problem.ts";
import { type ForgeRepository, forgeRepository } from "./forge-repository.ts";

export interface PullRequestOptions {
  forge: WorkOrderForge;
  /** The project's git URL, which names the repository. */
  gitUrl: string;
  /** The session's branch (pushed). */
  head: string;
  /** The branch it merges into. */
  base: string;
  title: string;
  body: string;
  /** The session's pull request when a turn opened one before: updated instead of opened. */
  existing?: PullRequestRef | undefined;
  /** How long one API request may take; default 15 000 ms. */
  timeoutMs?: number;
}

/** What happened: the pull request opened (or updated), or why not. */
export type PullRequestOutcome =
  | { pullRequest: PullRequestRef; opened: boolean; error?: undefined }
  | { pullRequest?: undefined; opened?: undefined; error: string };

const forgeNames: Record<ForgeKind, string> = { github: "GitHub", gitlab: "GitLab" };
/** An answer larger than this is cut: a pull request's JSON is a few kilobytes. */
const maxAnswerBytes = 1024 * 1024;

interface ForgeAnswer {
  status: number;
  json: unknown;
}

/** The calls both forges answer, each in its own words. */
interface ForgeApi {
  create(options: PullRequestOptions): Promise<ForgeAnswer>;
  /** Whether a create's answer says the branch already has an open pull request. */
  alreadyExists(answer: ForgeAnswer): boolean;
  findOpen(head: string): Promise<ForgeAnswer>;
  update(number: number, body: string): Promise<ForgeAnswer>;
  /** The pull request in an answer, and whether it is still open. */
  read(json: unknown): { ref: PullRequestRef; open: boolean } | null;
}

/**
 * Opens the session's pull request, or updates the body of the one it has (opening a new one when
 * that was closed or merged); an open pull request of the branch made elsewhere is found and used.
 * @example const outcome = await openOrUpdatePullRequest({ forge, gitUrl, head: "gadget/fix-a1b2c3", base: "main", title, body });
 */
export async function openOrUpdatePullRequest(
  options: PullRequestOptions,
): Promise<PullRequestOutcome> {
  const forgeName = forgeNames[options.forge.kind];
  let repository: ForgeRepository;
  try {
    repository = forgeRepository(options.forge.kind, options.gitUrl);
  } catch (error) {
    return { error: (error as Error).message };
  }
  const api =
    options.forge.kind === "github"
      ? githubApi(options, repository)
      : gitlabApi(options, repository);
  const refuse = (answer: ForgeAnswer) => new ForgeProblem(problem(forgeName, repository, answer));
  try {
    if (options.existing) {
      const updated = await api.update(options.existing.number, options.body);
      const read = updated.status === 200 ? api.read(updated.json) : null;
      if (read?.open) return { pullRequest: read.ref, opened: false };
      // Closed, merged or deleted since: the branch's new work gets a pull request of its own.
      if (updated.status !== 200 && updated.status !== 404) throw refuse(updated);
    }
    const created = await api.create(options);
    if (created.status === 201) {
      const read = api.read(created.json);
      if (!read) throw new ForgeProblem(`${forgeName} answered an unreadable pull request`);
      return { pullRequest: read.ref, opened: true };
    }
    if (!api.alreadyExists(created)) throw refuse(created);
    // Opened before (by a person, or a turn whose answer was lost): find it and bring it up to date.
    const found = await api.findOpen(options.head);
    if (found.status !== 200) throw refuse(found);
    const first = Array.isArray(found.json) ? api.read(found.json[0]) : null;
    if (!first) {
      throw new ForgeProblem(
        `${forgeName} says ${repository.name} has a pull request of ${options.head} but lists none open`,
      );
    }
    const updated = await api.update(first.ref.number, options.body);
    if (updated.status !== 200) throw refuse(updated);
    return { pullRequest: api.read(updated.json)?.ref ?? first.ref, opened: false };
  } catch (error) {
    const message =
      error instanceof ForgeProblem
        ? error.message
        : `could not reach ${forgeName} at ${options.forge.apiUrl}: ${reason(error)}`;
    // The token is never in our words; an API's own message is not ours, so make sure.
    return { error: message.split(options.forge.token).join("[token]") };
  }
}

function githubApi(options: PullRequestOptions, repository: ForgeRepository): ForgeApi {
  const call = caller(options, {
    Authorization: `Bearer ${options.forge.token}`,
    Accept: "application/vnd.github+json",
    "X-GitHub-Api-Version": "2022-11-28",
  });
  const pulls = `${repository.apiPath}/pulls`;
  return {
    create: ({ title, head, base, body }) => call("POST", pulls, { title, head, base, body }),
    alreadyExists: (answer) =>
      answer.status === 422 && /already exists/i.test(JSON.stringify(answer.json)),
    findOpen: (head) =>
      call(
        "GET",
        `${pulls}?${new URLSearchParams({ head: `${repository.owner}:${head}`, state: "open" })}`,
      ),
    update: (number, body) => call("PATCH", `${pulls}/${number}`, { body }),
    read: (json) => {
      const pull = json as { number?: unknown; html_url?: unknown; state?: unknown } | undefined;
      if (typeof pull?.number !== "number" || typeof pull.html_url !== "string") return null;
      return { ref: { url: pull.html_url, number: pull.number }, open: pull.state === "open" };
    },
  };
}

function gitlabApi(options: PullRequestOptions, repository: ForgeRepository): ForgeApi {
  const call = caller(options, { "PRIVATE-TOKEN": options.forge.token });
  const requests = `${repository.apiPath}/merge_requests`;
  return {
    create: ({ title, head, base, body }) =>
      call("POST", requests, {
        source_branch: head,
        target_branch: base,
        title,
        description: body,
      }),
    alreadyExists: (answer) => answer.status === 409,
    findOpen: (head) =>
      call("GET", `${requests}?${new URLSearchParams({ source_branch: head, state: "opened" })}`),
    update: (number, body) => call("PUT", `${requests}/${number}`, { description: body }),
    read: (json) => {
      const request = json as { iid?: unknown; web_url?: unknown; state?: unknown } | undefined;
      if (typeof request?.iid !== "number" || typeof request.web_url !== "string") return null;
      return {
        ref: { url: request.web_url, number: request.iid },
        open: request.state === "opened",
      };
    },
  };
}

/** One JSON request to the forge's API, with a timeout and the answer read up to a limit. */
function caller(options: PullRequestOptions, headers: Record<string, string>) {
  const base = options.forge.apiUrl.replace(/\/+$/, "");
  return async (method: string, path: string, body?: object): Promise<ForgeAnswer> => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: {
        ...headers,
        "User-Agent": "gadget-drone",
        ...(body ? { "Content-Type": "application/json" } : {}),
      },
      ...(body ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(options.timeoutMs ?? 15_000),
      redirect: "error",
    });
    const text = await readCapped(response);
    let json: unknown = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = { message: text.slice(0, 200) };
    }
    return { status: response.status, json };
  };
}

/** The answer's text, at most maxAnswerBytes of it (the rest is dropped unread). */
async function readCapped(response: Response): Promise<string> {
  if (!response.body) return "";
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.byteLength;
    if (size >= maxAnswerBytes) {
      await reader.cancel();
      break;
    }
  }
  return Buffer.concat(chunks).toString("utf8").slice(0, maxAnswerBytes);
}

/** Why the forge refused, in words: the status, what it means here, and the forge's own message. */
function problem(forgeName: string, repository: ForgeRepository, answer: ForgeAnswer): string {
  const said = messageOf(answer.json);
  const what = repository.apiPath.startsWith("/projects/") ? "project" : "repository";
  switch (answer.status) {
    case 401:
      return `${forgeName} refused the token (401) for ${repository.name}`;
    case 403:
      return `${forgeName} denied the token access (403) to ${repository.name}${said ? `: ${said}` : ""}`;
    case 404:
      return `${forgeName} found no ${what} ${repository.name} (404): check the forge's API URL and that the token may see it`;
    default:
      return `${forgeName} refused the pull request (${answer.status}) for ${repository.name}${said ? `: ${said}` : ""}`;
  }
}

/** The message in a GitHub (`message`, `errors`) or GitLab (`message`, `error`) error answer. */
function messageOf(json: unknown): string {
  if (!json || typeof json !== "object") return "";
  const answer = json as { message?: unknown; error?: unknown; errors?: unknown };
  const parts: string[] = [];
  const add = (value: unknown) => {
    if (typeof value === "string") parts.push(value);
    else if (Array.isArray(value)) for (const item of value) add(item);
    else if (value && typeof value === "object") {
      const entry = value as { message?: unknown; field?: unknown; code?: unknown };
      if (typeof entry.message === "string") parts.push(entry.message);
      else if (typeof entry.field === "string") parts.push(`${entry.field} ${String(entry.code)}`);
      else parts.push(JSON.stringify(value));
    }
  };
  add(answer.message);
  add(answer.error);
  add(answer.errors);
  return parts.join("; ").slice(0, 300);
}

/** Why a request never got an answer (fetch's cause says more than "fetch failed"). */
function reason(error: unknown): string {
  if (error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError")) {
    return "no answer in time";
  }
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error));
}
