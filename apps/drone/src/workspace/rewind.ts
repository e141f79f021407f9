// Rewinds a session's worktree: its branch goes back to before the first rewound turn that
// committed (the `Gadget-Turn` trailer names it), after the previous head and every uncommitted
// change (untracked files too) were kept as a commit under `refs/gadget/rewound/<session>/<n>`,
// so nothing is lost: `git checkout <ref>` brings it all back. A delivered branch is moved back on
// origin too, and the session's open pull request gets a body that lists only the turns kept.
// In a large worktree every git process that reads the index costs: the history, the head's tree
// and the backup refs are read in two processes beside the one scan (`add -A`), the reset only
// touches what differs and no `clean` follows it (docs/benchmarks.md, "Rewind: fewer passes").
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
    const prefix = `refs/gadget/rewound/${request.sessionId}/`;
    // Side by side: none of these waits for another (the history and the refs take no lock).
    const [history, , refs] = await Promise.all([
      readHistory(worktree),
      // Every change, untracked files included, into the index: the reset below then removes
      // what the turns added and the user left, as `clean -fd` would (ignored files stay).
      worktree.raw(["add", "-A"]),
      worktree.raw(["--no-optional-locks", "for-each-ref", "--format=%(refname)", prefix]),
    ]);
    const head = history[0];
    if (!head) throw new UserError("conflict", "The session's branch has no commit");
    const previousHead = head.hash;
    const first = firstCommitOf(history, request.turnIds);
    if (first && !first.parent) {
      throw new UserError("conflict", "The first rewound turn made the branch's first commit");
    }
    const target = first?.parent ?? previousHead;
    const kept = await keepEverything(worktree, head);
    const backupRef = `${prefix}${nextNumber(refs, prefix)}`;
    // The branch is put on the kept commit first (it matches the index and the files), so the
    // reset is a switch from it to the target: only what differs between the two is touched and
    // checked, where `reset --hard` checks every file. The lock is held throughout.
    await worktree.raw(["update-ref", backupRef, kept]);
    if (kept !== previousHead) await worktree.raw(["update-ref", "HEAD", kept, previousHead]);
    await worktree.raw(["reset", "--keep", target]).catch(async () => {
      // Should `--keep` refuse (a file it will not overwrite in the way of one the target has),
      // everything is under the backup ref already: the reset overwrites, as it used to.
      await worktree.raw(["reset", "--hard", target]);
    });
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

interface Commit {
  hash: string;
  tree: string;
  /** Its first parent; null for a root commit. */
  parent: string | null;
  body: string;
}

/** The branch's commits, newest first, each with its tree and first parent. */
async function readHistory(worktree: Repository): Promise<Commit[]> {
  const log = await worktree.raw([
    "--no-optional-locks",
    "log",
    "--format=%H%x00%T%x00%P%x00%B%x01",
    "HEAD",
  ]);
  const commits: Commit[] = [];
  for (const entry of log.split("\x01")) {
    const [hash, tree, parents, body] = entry.trim().split("\0");
    if (!hash || !tree) continue;
    commits.push({ hash, tree, parent: parents?.split(" ")[0] || null, body: body ?? "" });
  }
  return commits;
}

/** The oldest commit on the branch made by one of `turnIds`, or null when none committed. */
function firstCommitOf(history: Commit[], turnIds: readonly string[]): Commit | null {
  const trailers = new Set(turnIds.map(turnTrailer));
  let oldest: Commit | null = null;
  for (const commit of history) {
    if (commit.body.split("\n").some((line) => trailers.has(line.trim()))) oldest = commit;
  }
  return oldest;
}

/**
 * The worktree as it is (the index holds every change after `add -A`; ignored files aside) as a
 * commit on top of the head, or the head itself when nothing changed.
 */
async function keepEverything(worktree: Repository, head: Commit): Promise<string> {
  const tree = (await worktree.raw(["write-tree"])).trim();
  if (tree === head.tree) return head.hash;
  const kept = await worktree.raw([
    ...commitIdentity(worktree),
    "commit-tree",
    tree,
    "-p",
    head.hash,
    "-m",
    "Uncommitted changes kept by a rewind",
  ]);
  return kept.trim();
}

/** The session's next backup number: one past the highest under `prefix`. */
function nextNumber(refs: string, prefix: string): number {
  const numbers = refs
    .split("\n")
    .map((line) => Number(line.trim().slice(prefix.length)))
    .filter((number) => Number.isInteger(number));
  return Math.max(0, ...numbers) + 1;
}
