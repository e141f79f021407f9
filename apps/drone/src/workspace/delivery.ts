// Delivery: the drone pushes a session's branch to `origin` with the machine's own git credentials
// (the user's credential helpers and SSH setup), outside the sandbox; the agent never pushes. With
// delivery `pull-request` it then opens or updates the session's pull request on the forge.
import { existsSync } from "node:fs";
import path from "node:path";
import type {
  DeliverRequest,
  DeliverResult,
  PullRequestRef,
  WorkOrderForge,
} from "@gadget/protocol";
import { UserError } from "@gadget/protocol";
import { openOrUpdatePullRequest } from "../forge/pull-request.ts";
import { storedCredentials } from "./credentials.ts";
import { type DroneGitOptions, droneGit, readHardening, withoutCredentials } from "./git.ts";
import { tryLock } from "./lock.ts";
import { reopenSessionWorktree } from "./reopen.ts";
import {
  commitSessionWork,
  readWorktreeRecord,
  worktreeDirectory,
  worktreeLockFile,
} from "./worktree.ts";

/** What a push did: the branch's commit, and why it failed in words when it did. */
export interface PushOutcome {
  branch: string;
  commit: string | null;
  pushed: boolean;
  error?: string;
}

/**
 * Pushes the worktree's `branch` to `origin` under the same name. Never throws: a failed push is
 * an outcome whose `error` says why in words, with any credential in git's output left out.
 * @example const outcome = await pushSessionBranch(worktree.directory, "gadget/fix-login-a1b2c3");
 */
export async function pushSessionBranch(
  directory: string,
  branch: string,
  options: DroneGitOptions & {
    commit?: string | null;
    /** Move the remote branch back too, only if it is still at this commit (a rewind). */
    leaseFrom?: string;
  } = {},
): Promise<PushOutcome> {
  const worktree = await droneGit(directory, options, true);
  // The turn's commit is the branch's head when it made one; else ask git.
  const commit =
    options.commit ??
    (await worktree
      .revparse([`refs/heads/${branch}`])
      .then((found) => found.trim() || null)
      .catch(() => null));
  if (!commit) return { branch, commit, pushed: false, error: `branch ${branch} has no commit` };
  try {
    await worktree.raw([
      "push",
      // receivepack runs a program (locally, for a path remote): git's own, whatever the clone says.
      "--receive-pack=git-receive-pack",
      "--recurse-submodules=no",
      "--no-verify",
      "--porcelain",
      ...(options.leaseFrom
        ? [`--force-with-lease=refs/heads/${branch}:${options.leaseFrom}`]
        : []),
      "origin",
      `refs/heads/${branch}:refs/heads/${branch}`,
    ]);
    return { branch, commit, pushed: true };
  } catch (error) {
    return { branch, commit, pushed: false, error: pushProblem(error) };
  }
}

/** What opening or updating the pull request needs besides the branch. */
export interface PullRequestDelivery {
  /** The project's forge; absent: the project delivers pull requests but set no forge. */
  forge?: WorkOrderForge | undefined;
  gitUrl: string;
  /** The branch it merges into; absent: the remote's default branch. */
  base?: string | undefined;
  title: string;
  body: string;
  existing?: PullRequestRef | undefined;
}

/** What delivering the pull request did: the pull request, or why there is none. */
export interface PullRequestResult {
  pullRequest?: PullRequestRef;
  error?: string;
}

/**
 * Opens the session's pull request for the pushed `branch`, or updates the one it has. Never
 * throws; the token is used by this process alone.
 */
export async function deliverPullRequest(
  directory: string,
  branch: string,
  delivery: PullRequestDelivery,
): Promise<PullRequestResult> {
  if (!delivery.forge) {
    return {
      error:
        "the branch was pushed but no pull request opened: the project has no forge (set its kind, API URL and token)",
    };
  }
  const outcome = await openOrUpdatePullRequest({
    forge: delivery.forge,
    gitUrl: delivery.gitUrl,
    head: branch,
    base: delivery.base ?? (await remoteDefaultBranch(directory)),
    title: delivery.title,
    body: delivery.body,
    existing: delivery.existing,
  });
  // A failed update still has the session's pull request to show.
  if (outcome.error) {
    return {
      error: outcome.error,
      ...(delivery.existing ? { pullRequest: delivery.existing } : {}),
    };
  }
  return { pullRequest: outcome.pullRequest };
}

/** The remote's default branch as the clone knows it (`origin/HEAD`); `main` when it does not. */
async function remoteDefaultBranch(directory: string): Promise<string> {
  try {
    const worktree = await droneGit(directory, {}, true);
    const reference = (
      await worktree.raw(["symbolic-ref", "--short", "refs/remotes/origin/HEAD"])
    ).trim();
    return reference.replace(/^origin\//, "") || "main";
  } catch {
    return "main";
  }
}

/** Why a push failed, in a few words a user can act on; git's own line otherwise, without secrets. */
export function pushProblem(error: unknown): string {
  const output = withoutCredentials(error instanceof Error ? error.message : String(error));
  if (
    /authentication failed|could not read (username|password)|terminal prompts disabled|\b(401|403)\b|permission denied \(publickey|access denied/i.test(
      output,
    )
  ) {
    return "authentication failed for origin";
  }
  if (/\[rejected\]|non-fast-forward|fetch first|stale info/i.test(output)) {
    return "origin's branch has commits the session's branch lacks (not a fast-forward)";
  }
  if (
    /could not resolve host|connection refused|couldn't connect|timed out|unable to access/i.test(
      output,
    )
  ) {
    return "could not reach origin";
  }
  if (/does not appear to be a git repository|repository .* not found|not found/i.test(output)) {
    return "origin's repository was not found";
  }
  const line = output
    .split("\n")
    .map((entry) => entry.replace(/^(fatal|error|remote):\s*/i, "").trim())
    .find((entry) => entry && !entry.startsWith("To ") && entry !== "Done");
  return `the push to origin failed: ${line ?? "no reason given"}`;
}

/**
 * `session_deliver`: commits what is uncommitted in the session's worktree, pushes its branch, and
 * opens or updates its pull request when the request carries one.
 * Refuses (409) while a turn of the session holds the worktree; 404 when this drone has none. A
 * worktree pruned for idleness is checked out again from its branch first.
 */
export async function deliverSession(
  workspaceRoot: string,
  request: DeliverRequest,
): Promise<DeliverResult> {
  const directory = worktreeDirectory(workspaceRoot, request.projectSlug, request.sessionId);
  const noWorktree = () =>
    new UserError("not_found", "This drone has no worktree of that session", {
      details: { reason: "no_worktree" },
    });
  // A pruned worktree leaves its record (and branch) behind; without either, it was never here.
  const record = await readWorktreeRecord(directory);
  if (!record) throw noWorktree();
  const lockFile = worktreeLockFile(workspaceRoot, request.projectSlug, request.sessionId);
  const lock = await tryLock(lockFile, `deliver-${request.sessionId}`);
  if (!lock) {
    throw new UserError("conflict", "A turn of this session is running; deliver when it ends");
  }
  try {
    const present = existsSync(path.join(directory, ".git"));
    if (
      !present &&
      !(await reopenSessionWorktree(workspaceRoot, request, `deliver-${request.sessionId}`))
    ) {
      throw noWorktree();
    }
    // One read of the repository's config for the commit and the push.
    const hardened = readHardening(directory);
    const committed = await commitSessionWork(directory, request.message, {
      ...(request.commitAuthor ? { author: request.commitAuthor } : {}),
      hardened,
    });
    const outcome = await pushSessionBranch(directory, record.branch, {
      commit: committed,
      credentialStore: storedCredentials(workspaceRoot, request.projectSlug),
      hardened,
    });
    const delivered = { ...outcome, committed: committed !== null };
    if (!outcome.pushed || !request.pullRequest) return delivered;
    const pull = await deliverPullRequest(directory, record.branch, request.pullRequest);
    return {
      ...delivered,
      ...(pull.pullRequest ? { pullRequest: pull.pullRequest } : {}),
      ...(pull.error ? { error: pull.error } : {}),
    };
  } finally {
    await lock.release();
  }
}
