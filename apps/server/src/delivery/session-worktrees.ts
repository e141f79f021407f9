// Where a session's worktree is: the drone that took its latest turn (its next turns prefer it),
// and for `GET /api/sessions/:id` where that worktree stands — asked of the drone holding it,
// since the worktree lives only there.
import type { ChatSessionDocument } from "@gadget/db";
import {
  type SessionDetail,
  type SessionWorktreeRequest,
  type SessionWorktreeState,
  sessionWorktreeStateSchema,
} from "@gadget/protocol";
import { Types } from "mongoose";
import { type AskHoldersDependencies, askHolders } from "../drones/ask-holders.ts";
import { ownedSession } from "../owned.ts";
import { toSession } from "../serialize.ts";
import { type SessionWriteDependencies, updateSession } from "../turns/store/session-writes.ts";

export class SessionWorktrees {
  constructor(
    private readonly dependencies: AskHoldersDependencies & Pick<SessionWriteDependencies, "locks">,
  ) {}

  /**
   * Records that `droneId` took a turn of `session` (as read for the turn's work order): the
   * session's worktree is there now, so its next turns prefer that drone. Written only when the
   * session moved to another drone.
   */
  async tookTurn(session: Pick<ChatSessionDocument, "_id" | "drone">, droneId: string) {
    if (String(session.drone ?? "") === droneId) return;
    await updateSession(
      this.dependencies,
      { _id: session._id },
      { $set: { drone: new Types.ObjectId(droneId) } },
    );
  }

  /**
   * The user's session (404 otherwise) with `branch` and `worktree`; `worktree` is null when no
   * online drone holds the session's worktree, and the branch is then the one its turns recorded.
   * @example const session = await worktrees.describe(userId, sessionId);
   */
  async describe(userId: string, sessionId: string): Promise<SessionDetail> {
    const { models } = this.dependencies;
    const session = await ownedSession(models, userId, sessionId);
    const [project, last] = await Promise.all([
      models.Project.findById(session.project).select({ slug: 1, defaultBranch: 1 }).lean(),
      models.ChatTurn.findOne({ session: session._id, drone: { $ne: null } })
        .sort({ createdAt: -1, _id: -1 })
        .select({ drone: 1, branch: 1 })
        .lean(),
    ]);
    const worktree = project
      ? await this.ask(
          userId,
          {
            projectSlug: project.slug,
            sessionId: String(session._id),
            ...(project.defaultBranch ? { defaultBranch: project.defaultBranch } : {}),
          },
          last?.drone ?? null,
        )
      : null;
    return {
      ...toSession(session),
      branch: worktree?.branch ?? last?.branch ?? null,
      pullRequest: session.pullRequest
        ? { url: session.pullRequest.url, number: session.pullRequest.number }
        : null,
      worktree: worktree
        ? {
            ahead: worktree.ahead,
            behind: worktree.behind,
            dirty: worktree.dirty,
            head: worktree.head,
            base: worktree.base,
          }
        : null,
    };
  }

  /** The holding drone's answer; null when none holds the worktree or none answered. */
  private async ask(
    userId: string,
    request: SessionWorktreeRequest,
    lastDrone: Types.ObjectId | null,
  ): Promise<SessionWorktreeState | null> {
    try {
      const answer = await askHolders(this.dependencies, {
        userId,
        projectSlug: request.projectSlug,
        event: "session_worktree",
        request,
        preferred: lastDrone ? String(lastDrone) : null,
        // A detail of the page, not worth a long wait (a drone too old to know the request is silent).
        timeoutMs: Math.min(2_000, this.dependencies.config.droneRequestTimeoutMs),
        passOn: (error) => error.code === "not_found",
        parse: (result) => sessionWorktreeStateSchema.parse(result),
      });
      return answer.answered ? answer.result : null;
    } catch {
      // Where the worktree stands is a detail of the answer, never a reason to fail it.
      return null;
    }
  }
}
