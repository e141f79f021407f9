// Undoing a turn: the user's online drone holding the session's worktree makes a revert commit of
// the turn's commit (or, when that commit failed, restores the turn's starting snapshot); the turn
// then records it (`revertedAt`, `revertCommit`).
import { activeTurnStatuses, type ChatTurnDocument } from "@gadget/db";
import {
  SystemError,
  type TurnRevertRequest,
  type TurnRevertResult,
  turnRevertResultSchema,
  UserError,
} from "@gadget/protocol";
import { type AskHoldersDependencies, askHolders } from "../drones/ask-holders.ts";
import type { TurnStore } from "./store/turn-store.ts";

export interface TurnRevertDependencies extends AskHoldersDependencies {
  store: TurnStore;
}

/** What a revert did: the turn as now stored, and the drone's result. */
export interface TurnRevertOutcome {
  turn: ChatTurnDocument;
  result: TurnRevertResult;
}

export class TurnReverts {
  constructor(private readonly dependencies: TurnRevertDependencies) {}

  /**
   * Reverts the finished turn `turn` (already checked to be the user's). `conflict` when it was
   * reverted, a turn of its session runs, or later turns changed the same lines (`details.files`).
   * @example const { turn, result } = await reverts.revert(owned);
   */
  async revert(turn: ChatTurnDocument): Promise<TurnRevertOutcome> {
    const { models, store } = this.dependencies;
    if (turn.revertedAt) {
      throw new UserError("conflict", "This turn was already reverted", {
        details: { reason: "already_reverted" },
      });
    }
    const running = await models.ChatTurn.findOne({
      session: turn.session,
      status: { $in: activeTurnStatuses },
    })
      .select({ _id: 1 })
      .lean();
    if (running) {
      throw new UserError(
        "conflict",
        "A turn of this session is running; revert when it has finished",
        { details: { reason: "turn_running", turnId: String(running._id) } },
      );
    }
    const project = await models.Project.findById(turn.project)
      .select({ slug: 1, name: 1, delivery: 1 })
      .lean();
    if (!project) throw new UserError("not_found", "The turn's project no longer exists");
    const result = await this.onDrone(String(turn.user), project, {
      turnId: String(turn._id),
      sessionId: String(turn.session),
      projectSlug: project.slug,
      // A delivered branch would otherwise still hold the turn's changes on the remote.
      deliver: (project.delivery ?? "workspace") !== "workspace",
    });
    if (result.outcome === "unchanged") {
      // The turn changed files but has no commit of its own: its commit failed, and a later
      // turn's commit took its changes along. Undoing them would undo part of that turn too.
      if (turn.changes.length > 0) {
        throw new UserError(
          "conflict",
          "This turn's changes were never committed on their own (its commit failed; a later turn's commit holds them), so they cannot be reverted alone; edit the files by hand",
          {
            details: { reason: "not_committed", files: turn.changes.map((change) => change.path) },
          },
        );
      }
      return { turn, result };
    }
    const outcome = await store.mutate(String(turn._id), () => ({
      set: {
        revertedAt: new Date(),
        revertCommit: result.outcome === "reverted" ? result.commit : null,
      },
    }));
    return { turn: outcome?.turn ?? turn, result };
  }

  /** Asks each online drone holding the project in turn; the one with the worktree answers. */
  private async onDrone(
    userId: string,
    project: { slug: string; name: string },
    request: TurnRevertRequest,
  ): Promise<TurnRevertResult> {
    const answer = await askHolders(this.dependencies, {
      userId,
      projectSlug: project.slug,
      event: "turn_revert",
      request,
      // Another drone may hold the session's worktree.
      passOn: (error) =>
        (error.details as { reason?: unknown } | undefined)?.reason === "no_worktree",
      parse: (result) => turnRevertResultSchema.parse(result),
    });
    if (answer.answered) return answer.result;
    throw new SystemError(
      "no_drone_online",
      `No online drone holds this session's worktree of project "${project.name}": start the drone that ran the session's turns, then revert again`,
    );
  }
}
