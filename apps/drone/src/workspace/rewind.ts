// Rewinds a session's worktree: its branch goes back to before the first rewound turn that
// committed (the `Gadget-Turn` trailer names it), after the previous head and every uncommitted
// change (untracked files too) were kept as a commit under `refs/gadget/rewound/<session>/<n>`,
// so nothing is lost: `git checkout <ref>` brings it all back. A delivered branch is moved back on
// origin too, and the session's open pull request gets a body that lists only the turns kept.
// In a large worktree every pass over the files costs: one `status` finds what changed, only
// those paths are staged, and `reset --keep` touches only what differs (docs/benchmarks.md,
// "Rewind: one scan").
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
    // The scan is the long one: the old head is kept under the backup ref while it runs.
    const scanning = changedPaths(worktree);
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
    const [changes] = await Promise.all([
      scanning,
      worktree.raw(["update-ref", backupRef, previousHead, ""]),
    ]);
    // A worktree as the last turn left it needs no commit: the backup is the head. Otherwise the
    // backup moves on to the commit that holds the changes too, and so does the branch: it then
    // matches the index and the files, so the reset is a switch from it to the target that
    // touches and checks only what differs between the two (`reset --hard` checks every file).
    // `--keep` never drops a change: one made since the scan stays in the worktree, or the reset
    // is refused. The lock is held throughout.
    const kept = changes.length === 0 ? previousHead : await keepChanges(worktree, head, changes);
    if (kept !== previousHead) {
      await Promise.all([
        worktree.raw(["update-ref", backupRef, kept, previousHead]),
        worktree.raw(["update-ref", "HEAD", kept, previousHead]),
      ]);
    }
    await worktree.raw(["reset", "--keep", target]).catch(async () => {
      // Refused (a file changed since the scan, or one it will not overwrite stands where the
      // target has one): everything is staged and kept first, then the reset overwrites.
      await worktree.raw(["add", "-A"]);
      const again = await keepEverything(worktree, await commitOf(worktree, kept));
      if (again !== kept) {
        await worktree.raw(["update-ref", backupRef, again, kept]);
        await worktree.raw(["update-ref", "HEAD", again, kept]);
      }
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

/** Beyond this many changed paths one `add -A` beats naming them (and a command line's length). */
const namedPathsAtMost = 1_000;

/**
 * The paths that differ from the head — staged, changed, deleted or untracked (ignored files
 * aside) — from one `status`, which also saves the files' fresh stat data in the index for the
 * reset. A nested repository (listed as `dir/`) is left out: it stays where it is.
 */
async function changedPaths(worktree: Repository): Promise<string[]> {
  const listing = await worktree.raw([
    "status",
    "--porcelain=v1",
    "-z",
    "--untracked-files=all",
    "--no-renames",
    "--ignore-submodules=all",
  ]);
  return listing
    .split("\0")
    .filter((entry) => entry.length > 3)
    .map((entry) => entry.slice(3))
    .filter((file) => !file.endsWith("/"));
}

/**
 * The worktree as it is, ignored files aside, as a commit on top of the head, or the head itself
 * when nothing differs: `changes` are staged by name (their content hashed, nothing else read),
 * or with one `add -A` when there are many.
 */
async function keepChanges(worktree: Repository, head: Commit, changes: string[]): Promise<string> {
  const named = ["update-index", "--add", "--remove", "--replace", "--", ...changes];
  // Should git refuse a name (a path it will not stage), the whole scan stages what it can.
  if (changes.length > namedPathsAtMost) await worktree.raw(["add", "-A"]);
  else await worktree.raw(named).catch(() => worktree.raw(["add", "-A"]));
  return keepEverything(worktree, head);
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

/** The session's next backup number: one past the highest under `prefix`. */
function nextNumber(refs: string, prefix: string): number {
  const numbers = refs
    .split("\n")
    .map((line) => Number(line.trim().slice(prefix.length)))
    .filter((number) => Number.isInteger(number));
  return Math.max(0, ...numbers) + 1;
}
