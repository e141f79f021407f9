// The worktree phase of a turn: the session's lock, then the project's clone fetched (under the
// clone lock) and the session's worktree made or found, each step told as a `status` event.
import { agentEvent, WAITING_FOR_WORKTREE } from "@gadget/protocol";
import { acquireLock, type WorkspaceLock } from "../workspace/lock.ts";
import { prepareWorkspace } from "../workspace/prepare.ts";
import {
  cloneLockFile,
  prepareSessionWorktree,
  type SessionWorktree,
  worktreeLockFile,
} from "../workspace/worktree.ts";
import { type TurnScope, turnSessionId } from "./scope.ts";

/** Per session: its turns wait for each other, other sessions of the project run alongside. */
export function lockWorktree(
  { order, emit }: TurnScope,
  workspaceRoot: string,
  signal: AbortSignal,
): Promise<WorkspaceLock> {
  return acquireLock(
    worktreeLockFile(workspaceRoot, order.project.slug, turnSessionId(order)),
    order.turnId,
    {
      signal,
      // Users know turns by their prompts, not ids: the session page shows the other turn.
      onWait: () =>
        emit(
          agentEvent("status", {
            phase: "workspace",
            message: WAITING_FOR_WORKTREE,
          }),
        ),
    },
  );
}

/** Fetches the project's clone and makes (or finds) the session's worktree. */
export async function prepareWorktree(
  { order, emit }: TurnScope,
  workspaceRoot: string,
  signal: AbortSignal,
): Promise<SessionWorktree> {
  let lastPercent = -100;
  emit(
    agentEvent("status", {
      phase: "workspace",
      message: `Preparing the workspace for ${order.project.name}`,
    }),
  );
  // The clone is shared by every session of the project: one fetch or worktree add at a time.
  const cloneLock = await acquireLock(
    cloneLockFile(workspaceRoot, order.project.slug),
    order.turnId,
    {
      signal,
      onWait: () =>
        emit(
          agentEvent("status", {
            phase: "workspace",
            message: "Waiting for the project's clone: another turn is fetching it",
          }),
        ),
    },
  );
  try {
    const prepared = await prepareWorkspace({
      workspaceRoot,
      slug: order.project.slug,
      gitUrl: order.project.gitUrl,
      defaultBranch: order.project.defaultBranch,
      signal,
      onProgress: ({ stage, percent }) => {
        // Progress arrives many times a second; a status event every 10% is plenty.
        if (percent < lastPercent + 10 && percent !== 100) return;
        lastPercent = percent;
        emit(agentEvent("status", { phase: "workspace", message: `${stage} ${percent}%` }));
      },
    });
    emit(agentEvent("status", { phase: "workspace", message: prepared.message }));
    const worktree = await prepareSessionWorktree({
      workspaceRoot,
      slug: order.project.slug,
      clone: prepared.directory,
      session: { _id: turnSessionId(order), name: order.session.name },
      branchPrefix: order.project.branchPrefix,
      defaultBranch: prepared.defaultBranch,
      ...(order.session.startFrom ? { startFrom: order.session.startFrom } : {}),
      signal,
    });
    emit(agentEvent("status", { phase: "workspace", message: worktree.message }));
    return worktree;
  } finally {
    await cloneLock.release();
  }
}
