// Where a session's worktree stands (`session_worktree`): its branch against the default branch it
// started from, and whether it holds uncommitted changes. Read with the drone's hardened git.
import { existsSync } from "node:fs";
import path from "node:path";
import { type SessionWorktreeState, UserError } from "@gadget/protocol";
import { defuseGitControlFiles } from "@gadget/tools";
import { droneGit } from "./git.ts";
import { projectDirectory } from "./prepare.ts";
import { readWorktreeRecord, worktreeDirectory } from "./worktree.ts";

/**
 * The session's branch, its head, and commits ahead of and behind `origin/<default branch>` as
 * last fetched. A worktree pruned for idleness is described from its branch (never dirty).
 * UserError `not_found` (reason `no_worktree`) when this drone never held the session.
 * @example const state = await describeSessionWorktree(root, { projectSlug, sessionId });
 */
export async function describeSessionWorktree(
  workspaceRoot: string,
  session: { projectSlug: string; sessionId: string; defaultBranch?: string | undefined },
): Promise<SessionWorktreeState> {
  const directory = worktreeDirectory(workspaceRoot, session.projectSlug, session.sessionId);
  const clone = projectDirectory(workspaceRoot, session.projectSlug);
  const record = await readWorktreeRecord(directory);
  const present = existsSync(path.join(directory, ".git"));
  if (!record || !existsSync(path.join(clone, ".git"))) {
    throw new UserError("not_found", "This drone holds no worktree of that session", {
      details: { reason: "no_worktree" },
    });
  }
  const repository = await droneGit(present ? directory : clone, {}, true);
  const branch = `refs/heads/${record.branch}`;
  const head = await repository
    .raw(["rev-parse", "--verify", "--quiet", `${branch}^{commit}`])
    .then((found) => found.trim() || null)
    .catch(() => null);
  const base = await baseOf(repository, session.defaultBranch);
  let ahead = 0;
  let behind = 0;
  if (head && base) {
    const counts = await repository.raw([
      "rev-list",
      "--left-right",
      "--count",
      `${branch}...${base}`,
    ]);
    const [left, right] = counts.trim().split(/\s+/).map(Number);
    ahead = left ?? 0;
    behind = right ?? 0;
  }
  const dirty = present ? await holdsChanges(directory) : false;
  return {
    branch: record.branch,
    head,
    base: base?.replace(/^refs\/remotes\//, "") ?? "",
    ahead,
    behind,
    dirty,
  };
}

/** The default branch as last fetched: the project's, else what `origin/HEAD` points at. */
async function baseOf(
  repository: Awaited<ReturnType<typeof droneGit>>,
  defaultBranch: string | undefined,
): Promise<string | null> {
  if (defaultBranch) {
    const ref = `refs/remotes/origin/${defaultBranch}`;
    const found = await repository.raw(["rev-parse", "--verify", "--quiet", ref]).catch(() => "");
    return found.trim() ? ref : null;
  }
  const symbolic = await repository
    .raw(["symbolic-ref", "--quiet", "refs/remotes/origin/HEAD"])
    .then((found) => found.trim())
    .catch(() => "");
  if (symbolic) return symbolic;
  for (const candidate of ["refs/remotes/origin/main", "refs/remotes/origin/master"]) {
    const found = await repository
      .raw(["rev-parse", "--verify", "--quiet", candidate])
      .catch(() => "");
    if (found.trim()) return candidate;
  }
  return null;
}

/** How long `git status` may go without finishing before a named pipe is suspected. */
const statusPatienceMs = 5000;

/**
 * Whether the worktree holds uncommitted changes. A named pipe under a git control file's name
 * (the model's `mkfifo .gitignore`) would hold `git status` in open() for good; rather than walk
 * the whole worktree for one on every call, a status that takes too long is stopped, such files
 * are removed, and it runs again.
 */
async function holdsChanges(directory: string): Promise<boolean> {
  const status = async (signal?: AbortSignal) => {
    const repository = await droneGit(directory, { signal }, true);
    // No optional lock: a status stopped midway leaves no index.lock behind.
    return (
      await repository.raw([
        "--no-optional-locks",
        "status",
        "--porcelain",
        "--untracked-files=normal",
      ])
    ).trim();
  };
  const patience = AbortSignal.timeout(statusPatienceMs);
  try {
    return (await status(patience)) !== "";
  } catch (error) {
    if (!patience.aborted) throw error;
    await defuseGitControlFiles(directory);
    return (await status()) !== "";
  }
}
