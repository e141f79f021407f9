// Rewinds a session's worktree: its branch goes back to before the first rewound turn that
// committed (the `Gadget-Turn` trailer names it), after the previous head and every uncommitted
// change (untracked files too) were kept as a commit under `refs/gadget/rewound/<session>/<n>`,
// so nothing is lost: `git checkout <ref>` brings it all back. A delivered branch is moved back on
// origin too, and the session's open pull request gets a body that lists only the turns kept.
import { existsSync } from "node:fs";
import path from "node:path";
import { type SessionRewindRequest, type SessionRewindResult, UserError } from "@gadget/protocol";
import { storedCredentials } from "./credentials.ts";
import { deliverPullRequest, pushSessionBranch } from "./delivery.ts";
import { droneGit } from "./git.ts";
import { tryLock } from "./lock.ts";
import { turnTrailer } from "./revert.ts";
import {
  commitIdentity,
  readWorktreeRecord,
  worktreeDirectory,
  worktreeLockFile,
} from "./worktree.ts";

type Repository = Awaited<ReturnType<typeof droneGit>>;

/**
 * Rewinds the session's worktree under its lock. UserErrors: `not_found` (reason `no_worktree`:
 * another drone may hold it), `conflict` (reason `turn_running`).
 * @example const { backupRef } = await rewindSession(workspaceRoot, { sessionId, projectSlug, turnIds });
 */
export async function rewindSession(
  workspaceRoot: string,
  request: SessionRewindRequest,
): Promise<SessionRewindResult> {
  const directory = worktreeDirectory(workspaceRoot, request.projectSlug, request.sessionId);
  if (!existsSync(path.join(directory, ".git"))) {
    throw new UserError("not_found", "This drone does not hold the session's worktree", {
      details: { reason: "no_worktree" },
    });
  }
  const lock = await tryLock(
    worktreeLockFile(workspaceRoot, request.projectSlug, request.sessionId),
    `rewind-${request.sessionId}`,
  );
  if (!lock) {
    throw new UserError(
      "conflict",
      "A turn of this session is running; rewind when it has finished",
      {
        details: { reason: "turn_running" },
      },
    );
  }
  try {
    const worktree = await droneGit(directory, {}, true);
    const previousHead = (await worktree.raw(["rev-parse", "HEAD"])).trim();
    const first = await firstCommitOf(worktree, request.turnIds);
    const target = first ? (await worktree.raw(["rev-parse", `${first}^`])).trim() : previousHead;
    const backupRef = await keepEverything(worktree, request.sessionId, previousHead);
    await worktree.raw(["reset", "--hard", target]);
    await worktree.raw(["clean", "-fd"]);
    const result = { previousHead, head: target, backupRef };
    const branch = (await readWorktreeRecord(directory))?.branch;
    if (!request.deliver || !branch || target === previousHead) return result;
    // Only if origin's branch is still where this drone last pushed it: a push made elsewhere
    // since is refused, not overwritten.
    const pushed = await pushSessionBranch(directory, branch, {
      commit: target,
      leaseFrom: previousHead,
      credentialStore: storedCredentials(workspaceRoot, request.projectSlug),
    });
    // The open pull request's body lists the turns: it is told which ones are left.
    const pull =
      pushed.pushed && request.pullRequest
        ? await deliverPullRequest(directory, branch, request.pullRequest)
        : {};
    return {
      ...result,
      pushed: pushed.pushed,
      ...(pushed.error ? { pushError: pushed.error } : {}),
      ...(pull.error ? { pullRequestError: pull.error } : {}),
    };
  } finally {
    await lock.release();
  }
}

/** The oldest commit on the branch made by one of `turnIds`, or null when none committed. */
async function firstCommitOf(worktree: Repository, turnIds: readonly string[]) {
  const trailers = new Set(turnIds.map(turnTrailer));
  const log = await worktree.raw(["log", "--format=%H%x00%B%x01", "HEAD"]);
  let oldest: string | null = null;
  for (const entry of log.split("\x01")) {
    const [hash, body] = entry.trim().split("\0");
    if (hash && body?.split("\n").some((line) => trailers.has(line.trim()))) oldest = hash;
  }
  return oldest;
}

/**
 * Stores the worktree as it is (tracked and untracked changes, ignored files aside) as a commit on
 * top of the head, or the head itself when clean, under the session's next backup ref.
 */
async function keepEverything(worktree: Repository, sessionId: string, head: string) {
  await worktree.raw(["add", "-A"]);
  const tree = (await worktree.raw(["write-tree"])).trim();
  const headTree = (await worktree.raw(["rev-parse", `${head}^{tree}`])).trim();
  const kept =
    tree === headTree
      ? head
      : (
          await worktree.raw([
            ...commitIdentity(worktree),
            "commit-tree",
            tree,
            "-p",
            head,
            "-m",
            "Uncommitted changes kept by a rewind",
          ])
        ).trim();
  const prefix = `refs/gadget/rewound/${sessionId}/`;
  const existing = (await worktree.raw(["for-each-ref", "--format=%(refname)", prefix]))
    .split("\n")
    .map((line) => Number(line.trim().slice(prefix.length)))
    .filter((number) => Number.isInteger(number));
  const ref = `${prefix}${Math.max(0, ...existing) + 1}`;
  await worktree.raw(["update-ref", ref, kept]);
  return ref;
}
