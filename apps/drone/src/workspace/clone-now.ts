// "Clone now": the project's checkout cloned or fetched before any turn, the way a turn does it
// (prepareWorkspace under the clone lock), so the web IDE's file tree has something to show.
import type { ProjectCloneRequest, ProjectCloneResult } from "@gadget/protocol";
import { UserError } from "@gadget/protocol";
import { acquireLock } from "./lock.ts";
import { prepareWorkspace } from "./prepare.ts";
import { cloneLockFile } from "./worktree.ts";

/** How long a clone request waits for a turn to finish fetching the same clone. */
const lockWaitMs = 30_000;

/**
 * Clones the project when missing, else fetches it (fast-forwarding its default-branch checkout).
 * @example const result = await cloneProject(workspaceRoot, { projectSlug, gitUrl });
 */
export async function cloneProject(
  workspaceRoot: string,
  request: ProjectCloneRequest,
  options: { lockWaitMs?: number } = {},
): Promise<ProjectCloneResult> {
  const waited = AbortSignal.timeout(options.lockWaitMs ?? lockWaitMs);
  const lock = await acquireLock(cloneLockFile(workspaceRoot, request.projectSlug), "clone-now", {
    signal: waited,
  }).catch(() => {
    throw new UserError("conflict", "A turn is fetching the project's clone; try again shortly", {
      details: { reason: "clone_busy" },
    });
  });
  try {
    const prepared = await prepareWorkspace({
      workspaceRoot,
      slug: request.projectSlug,
      gitUrl: request.gitUrl,
      defaultBranch: request.defaultBranch,
    });
    return { outcome: prepared.outcome, message: prepared.message, branch: prepared.branch };
  } finally {
    await lock.release();
  }
}
