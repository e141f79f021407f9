// `POST /api/sessions/:id/deliver`: asks an online drone holding the session's worktree to commit
// its uncommitted changes, push the branch and (delivery `pull-request`) open or update the
// session's pull request, then records the outcome on the session's last turn.
import type { ChatSessionDocument } from "@gadget/db";
import { activeTurnStatuses } from "@gadget/db";
import {
  type DeliverRequest,
  type DeliverResult,
  deliverResultSchema,
  pullRequestText,
  type SessionDeliveryAnswer,
  SystemError,
  UserError,
} from "@gadget/protocol";
import type { SecretBox } from "../crypto/secret-box.ts";
import { openForge } from "../dispatch/work-order.ts";
import { type AskHoldersDependencies, askHolders } from "../drones/ask-holders.ts";
import { ownedSession } from "../owned.ts";
import { type SessionWriteDependencies, updateSession } from "../turns/store/session-writes.ts";
import type { TurnStore } from "../turns/store/turn-store.ts";

export interface SessionDeliveryDependencies
  extends AskHoldersDependencies,
    Pick<SessionWriteDependencies, "locks"> {
  store: TurnStore;
  /** Opens the project's forge token for the drone's request. */
  secretBox: SecretBox;
}

/** Delivers sessions on demand through the drone that holds their worktree. */
export class SessionDelivery {
  constructor(private readonly dependencies: SessionDeliveryDependencies) {}

  /**
   * Commits and pushes the session's work now. 404 for a session not the user's; 409 while a turn
   * of the session runs; 503 when no online drone holds the worktree.
   */
  async deliver(userId: string, sessionId: string): Promise<SessionDeliveryAnswer> {
    const { models } = this.dependencies;
    const session = await ownedSession(models, userId, sessionId);
    const project = await models.Project.findById(session.project).lean();
    if (!project) throw new UserError("not_found", "The session's project no longer exists");
    const busy = await models.ChatTurn.exists({
      session: session._id,
      status: { $in: ["queued", ...activeTurnStatuses] },
    });
    if (busy) {
      throw new UserError(
        "conflict",
        "A turn of this session is queued or running; deliver when it has ended",
      );
    }
    const last = await models.ChatTurn.findOne({ session: session._id })
      .sort({ createdAt: -1, _id: -1 })
      .select({ _id: 1, drone: 1, prompt: 1 })
      .lean();
    const result = await this.ask(userId, project.name, last?.drone ? String(last.drone) : null, {
      projectSlug: project.slug,
      sessionId: String(session._id),
      message: `Hand edits in ${session.name}`.slice(0, 72),
      ...(project.commitAuthor
        ? { commitAuthor: { name: project.commitAuthor.name, email: project.commitAuthor.email } }
        : {}),
      ...(project.delivery === "pull-request" && project.forge
        ? {
            pullRequest: {
              forge: openForge(project.forge, this.dependencies.secretBox),
              gitUrl: project.gitUrl,
              ...(project.defaultBranch ? { base: project.defaultBranch } : {}),
              ...pullRequestText(
                session.name,
                this.prompts(session, last?.prompt),
                session.forgeIssue ?? undefined,
              ),
              ...(session.pullRequest
                ? {
                    existing: {
                      url: session.pullRequest.url,
                      number: session.pullRequest.number,
                    },
                  }
                : {}),
            },
          }
        : {}),
    });
    if (result.pullRequest) {
      await updateSession(
        this.dependencies,
        { _id: session._id },
        { $set: { pullRequest: result.pullRequest } },
      );
    }
    if (last) {
      await this.dependencies.store.mutate(String(last._id), () => ({
        set: {
          delivery: {
            branch: result.branch,
            commit: result.commit,
            pushedAt: result.pushed ? new Date() : null,
            pullRequestUrl: result.pullRequest?.url ?? session.pullRequest?.url ?? null,
            error: result.error ?? null,
          },
        },
      }));
    }
    return { ...result, turnId: last ? String(last._id) : null };
  }

  /** The session's prompts in order: its remembered turns', and its last turn's when not among them. */
  private prompts(session: ChatSessionDocument, lastPrompt: string | undefined): string[] {
    const prompts = (session.history ?? [])
      .filter((message) => message.role === "user")
      .map((message) => message.content);
    return lastPrompt && prompts.at(-1) !== lastPrompt ? [...prompts, lastPrompt] : prompts;
  }

  /** Sends the request to the drones holding the project's clone, the session's last drone first. */
  private async ask(
    userId: string,
    projectName: string,
    lastDrone: string | null,
    request: DeliverRequest,
  ): Promise<DeliverResult> {
    const answer = await askHolders(this.dependencies, {
      userId,
      projectSlug: request.projectSlug,
      event: "session_deliver",
      request,
      preferred: lastDrone,
      // Another drone of the user may hold the session's worktree.
      passOn: (error) => error.code === "not_found",
      parse: (result) => deliverResultSchema.parse(result),
    });
    if (answer.answered) return answer.result;
    throw new SystemError(
      "no_drone_online",
      answer.holders === 0
        ? `No online drone holds project "${projectName}": start the drone that ran this session`
        : "No online drone holds this session's worktree: start the drone that ran it",
    );
  }
}
