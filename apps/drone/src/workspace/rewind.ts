// Rewinds a session's worktree: its branch goes back to before the first rewound turn that
// committed (the `Gadget-Turn` trailer names it), after the previous head and every uncommitted
// change (untracked files too) were kept as a commit under `refs/gadget/rewound/<session>/<n>`,
// so nothing is lost: `git checkout <ref>` brings it all back. A delivered branch is moved back on
// origin too, and the session's open pull request gets a body that lists only the turns kept.
// In a large worktree every pass over the files costs: one `add -A` stages and says what changed
// (a worktree as its last turn left it makes no commit), the old head is kept meanwhile, and
// `reset --keep` touches only what differs (docs/benchmarks.md, "Rewind: one scan"). The config
// is read once for all of its git, spawned directly (localGit: no 50 ms wait after a silent one).
import { existsSync } from "node:fs";
import path from "node:path";
import { type SessionRewindRequest, type SessionRewindResult, UserError } from "@gadget/protocol";
import { storedCredentials } from "./credentials.ts";
import { deliverPullRequest, pushSessionBranch } from "./delivery.ts";
import { type LocalGit, localGit, readHardening } from "./git.ts";
import { tryLock } from "./lock.ts";
import { turnTrailer } from "./revert.ts";
import {
  commitIdentity,
  readWorktreeRecord,
  worktreeDirectory,
  worktreeLockFile,
} from "./worktree.ts";

type Repository = LocalGit;

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
    // One read of the config for every call, the push's too: between them only this git runs.
    const hardened = readHardening(directory);
    const worktree = await localGit(directory, { hardened });
    const prefix = `refs/gadget/rewound/${request.sessionId}/`;
    // Side by side: none of these waits for another (the history and the refs take no lock).
    // The scan is the long one: the old head is kept under the backup ref while it runs.
    const scanning = stageEverything(worktree);
    scanning.catch(() => undefined); // awaited below; failing before that is not unhandled
    const [history, refs] = await Promise.all([
      readHistory(worktree),
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
    const backupRef = `${prefix}${nextNumber(refs, prefix)}`;
    // Created, never overwritten (the empty old value): the head as it is.
    const [changed] = await Promise.all([
      scanning,
      worktree.raw(["update-ref", backupRef, previousHead, ""]),
    ]);
    // A worktree as the last turn left it needs no commit: the backup is the head. Otherwise the
    // backup moves on to the commit that holds the changes too, and so does the branch: it then
    // matches the index and the files, so the reset is a switch from it to the target that
    // touches and checks only what differs between the two (`reset --hard` checks every file).
    // `--keep` never drops a change: one made since the scan stays in the worktree, or the reset
    // is refused. The lock is held throughout.
    const kept = changed ? await keepEverything(worktree, head) : previousHead;
    if (kept !== previousHead) await moveBoth(worktree, backupRef, kept, previousHead);
    await worktree.raw(["reset", "--keep", target]).catch(async () => {
      // Refused (a file changed since the scan, or one it will not overwrite stands where the
      // target has one): everything is staged and kept first, then the reset overwrites.
      await worktree.raw(["add", "-A"]);
      const again = await keepEverything(worktree, await commitOf(worktree, kept));
      if (again !== kept) await moveBoth(worktree, backupRef, again, kept);
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
      hardened,
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
 * Every change into the index, untracked files included (ignored files aside), in one pass over
 * the files (`add -A`, which names each path it stages); true when the index now differs from
 * the head: something was staged now, or before (what a failed commit left). The reset below
 * then removes what the turns added and the user left, as `clean -fd` would.
 */
async function stageEverything(worktree: Repository): Promise<boolean> {
  const [changed, stagedBefore] = await Promise.all([
    // A path git will not stage (a nested repository with no commit) stays where it is; as git
    // then fails, whether it staged something is found out from the tree (keepEverything).
    worktree.raw(["add", "-A", "--verbose", "--ignore-errors"]).then(
      (added) => /^(add|remove) '/m.test(added),
      () => true,
    ),
    // The index as it was or as `add` left it: either way it differs only if something is staged.
    worktree.raw(["--no-optional-locks", "diff-index", "--cached", "--quiet", "HEAD", "--"]).then(
      () => false,
      () => true,
    ),
  ]);
  return changed || stagedBefore;
}

/**
 * The index as a commit on top of `base`, or `base` itself when its tree is the index's.
 */
async function keepEverything(
  worktree: Repository,
  base: Pick<Commit, "hash" | "tree">,
): Promise<string> {
  const tree = (await worktree.raw(["write-tree"])).trim();
  if (tree === base.tree) return base.hash;
  const kept = await worktree.raw([
    ...commitIdentity(worktree),
    "commit-tree",
    tree,
    "-p",
    base.hash,
    "-m",
    "Uncommitted changes kept by a rewind",
  ]);
  return kept.trim();
}

/** A commit and its tree. */
async function commitOf(
  worktree: Repository,
  hash: string,
): Promise<Pick<Commit, "hash" | "tree">> {
  const tree = await worktree.raw(["rev-parse", `${hash}^{tree}`]);
  return { hash, tree: tree.trim() };
}

/**
 * The backup ref and the branch (through HEAD) from `from` to `to`, in one transaction: both move
 * or neither does.
 */
async function moveBoth(worktree: Repository, backupRef: string, to: string, from: string) {
  await worktree.raw(
    ["update-ref", "--stdin"],
    `update ${backupRef} ${to} ${from}\nupdate HEAD ${to} ${from}\n`,
  );
}

/** The session's next backup number: one past the highest under `prefix`. */
function nextNumber(refs: string, prefix: string): number {
  const numbers = refs
    .split("\n")
    .map((line) => Number(line.trim().slice(prefix.length)))
    .filter((number) => Number.isInteger(number));
  return Math.max(0, ...numbers) + 1;
}
