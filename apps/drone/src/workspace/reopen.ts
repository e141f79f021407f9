// A session's worktree pruned for idleness comes back on demand (revert, deliver, hand edits,
// where it stands): checked out again from the branch its record names.
import { existsSync } from "node:fs";
import path from "node:path";
import { UserError } from "@gadget/protocol";
import { droneGit } from "./git.ts";
import { tryLock } from "./lock.ts";
import { projectDirectory } from "./prepare.ts";
import {
  cloneLockFile,
  prepareSessionWorktree,
  readWorktreeRecord,
  worktreeDirectory,
} from "./worktree.ts";

/**
 * Adds the pruned worktree again on the branch its record names, under the clone's lock (as a
 * turn does); false when the record, the clone or the branch is gone. `holder` names who holds
 * the clone's lock meanwhile. UserError `conflict` (reason `clone_busy`) while a turn fetches.
 * @example if (!(await reopenSessionWorktree(root, { projectSlug, sessionId }, "deliver"))) throw noWorktree();
 */
export async function reopenSessionWorktree(
  workspaceRoot: string,
  session: { projectSlug: string; sessionId: string },
  holder: string,
): Promise<boolean> {
  const clone = projectDirectory(workspaceRoot, session.projectSlug);
  const directory = worktreeDirectory(workspaceRoot, session.projectSlug, session.sessionId);
  const record = await readWorktreeRecord(directory);
  if (!record || !existsSync(path.join(clone, ".git"))) return false;
  const cloneLock = await tryLock(cloneLockFile(workspaceRoot, session.projectSlug), holder);
  if (!cloneLock) {
    throw new UserError("conflict", "Another turn is fetching the project's clone; try again", {
      details: { reason: "clone_busy" },
    });
  }
  try {
    const repository = await droneGit(clone, {}, true);
    const branch = await repository
      .raw(["rev-parse", "--verify", "--quiet", `refs/heads/${record.branch}`])
      .catch(() => "");
    if (!branch.trim()) return false;
    // With its record's branch present this checks that branch out; it never makes a new one.
    await prepareSessionWorktree({
      workspaceRoot,
      slug: session.projectSlug,
      clone,
      session: { _id: session.sessionId, name: "" },
      branchPrefix: "",
      defaultBranch: null,
    });
    return true;
  } finally {
    await cloneLock.release();
  }
}
