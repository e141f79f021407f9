// Opens a session's pull request (GitLab: merge request) through the forge's REST API once its
// branch is pushed, or updates the one it has. Runs in the drone's own process with the project's
// token: never in a sandboxed command, never seen by the agent. Never throws: a failure is an
// outcome whose `error` says why in words naming the forge, without the token.
import {
  FORGE_NAMES,
  type ForgeRepository,
  forgeRepository,
  type PullRequestRef,
  type WorkOrderForge,
} from "@gadget/protocol";
import { type ForgePull, forgeApi } from "./forge-apis.ts";
import { type ForgeAnswer, messageOf, succeeded, unreachableReason } from "./forge-http.ts";
import { ForgeProblem } from "./forge-problem.ts";

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
  /** How long Gitea may take to know a just-pushed branch; default 10 000 ms. */
  branchWaitMs?: number;
}

/** What happened: the pull request opened (or updated), or why not. */
export type PullRequestOutcome =
  | { pullRequest: PullRequestRef; opened: boolean; error?: undefined }
  | { pullRequest?: undefined; opened?: undefined; error: string };

/**
 * Opens the session's pull request, or updates the body of the one it has while it is open (a
 * closed or merged one is left alone and a new one opened); an open pull request of the branch
 * made elsewhere is found and used.
 * @example const outcome = await openOrUpdatePullRequest({ forge, gitUrl, head: "gadget/fix-a1b2c3", base: "main", title, body });
 */
export async function openOrUpdatePullRequest(
  options: PullRequestOptions,
): Promise<PullRequestOutcome> {
  const forgeName = FORGE_NAMES[options.forge.kind];
  // Each forge's own word for it: a GitLab user looks for a merge request.
  const noun = options.forge.kind === "gitlab" ? "merge request" : "pull request";
  let repository: ForgeRepository;
  try {
    repository = forgeRepository(options.forge.kind, options.gitUrl);
  } catch (error) {
    return { error: (error as Error).message };
  }
  const refuse = (answer: ForgeAnswer) =>
    new ForgeProblem(problem(forgeName, noun, repository, answer));
  const api = forgeApi({
    forge: options.forge,
    repository,
    refuse,
    timeoutMs: options.timeoutMs,
    branchWaitMs: options.branchWaitMs,
  });
  const update = async (pull: ForgePull): Promise<PullRequestOutcome> => {
    const updated = await api.update(pull.ref.number, options.body);
    if (!succeeded(updated)) throw refuse(updated);
    return { pullRequest: api.read(updated.json)?.ref ?? pull.ref, opened: false };
  };
  try {
    if (options.existing) {
      const current = await api.get(options.existing.number);
      if (!succeeded(current) && current.status !== 404) throw refuse(current);
      const pull = succeeded(current) ? api.read(current.json) : null;
      if (pull?.open) return await update(pull);
      // Closed, merged or deleted since: the branch's new work gets a pull request of its own.
    }
    const created = await api.create(options);
    if (succeeded(created)) {
      const read = api.read(created.json);
      if (!read) throw new ForgeProblem(`${forgeName} answered an unreadable ${noun}`);
      return { pullRequest: read.ref, opened: true };
    }
    if (!api.alreadyExists(created)) throw refuse(created);
    // Opened before (by a person, or a turn whose answer was lost): find it and bring it up to date.
    const found = await api.findOpen(options.head, options.base);
    if (!found) {
      throw new ForgeProblem(
        `${forgeName} says ${repository.name} has a ${noun} of ${options.head} but lists none open`,
      );
    }
    return await update(found);
  } catch (error) {
    const message =
      error instanceof ForgeProblem
        ? error.message
        : `could not reach ${forgeName} at ${options.forge.apiUrl}: ${unreachableReason(error)}`;
    // The token is never in our words; an API's own message is not ours, so make sure.
    return { error: message.split(options.forge.token).join("[token]") };
  }
}

/** Why the forge refused, in words: the status, what it means here, and the forge's own message. */
function problem(
  forgeName: string,
  noun: string,
  repository: ForgeRepository,
  answer: ForgeAnswer,
): string {
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
      return `${forgeName} refused the ${noun} (${answer.status}) for ${repository.name}${said ? `: ${said}` : ""}`;
  }
}
