// Undoing a turn: the user's online drone holding the session's worktree makes a revert commit of
// the turn's commit (or, when that commit failed, restores the turn's starting snapshot); the turn
// then records it (`revertedAt`, `revertCommit`).
import { activeTurnStatuses, type ChatTurnDocument, type Models } from "@gadget/db";
import {
  type Ack,
  relayedCode,
  SystemError,
  type TurnRevertRequest,
  type TurnRevertResult,
  turnRevertResultSchema,
  UserError,
} from "@gadget/protocol";
import type { ResolvedConfig } from "../config.ts";
import { onlineDrones } from "../drones/online-drones.ts";
import type { PresenceStore } from "../drones/presence.ts";
import { type DronesNamespace, droneRoom } from "../sockets/rooms.ts";
import type { TurnStore } from "./turn-store.ts";

export interface TurnRevertDependencies {
  models: Models;
  presence: PresenceStore;
  store: TurnStore;
  config: Pick<ResolvedConfig, "droneRequestTimeoutMs">;
  /** The drones' namespace (a getter: it exists only once the HTTP server is built). */
  drones: () => DronesNamespace;
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
    const holders = await onlineDrones(this.dependencies, userId, (presence) =>
      presence.workspaces.includes(project.slug),
    );
    for (const { droneId } of holders) {
      let answers: Array<Ack<{ result: unknown }>>;
      try {
        answers = (await this.dependencies
          .drones()
          .to(droneRoom(droneId))
          .timeout(this.dependencies.config.droneRequestTimeoutMs)
          .emitWithAck("turn_revert", request)) as Array<Ack<{ result: unknown }>>;
      } catch {
        continue;
      }
      const answer = answers[0];
      if (!answer) continue;
      if (answer.ok) {
        // A peer's data: checked before the turn records it.
        const parsed = turnRevertResultSchema.safeParse(answer.result);
        if (parsed.success) return parsed.data;
        throw new SystemError(
          "internal",
          "The drone answered the revert with something unreadable",
        );
      }
      const reason = (answer.error.details as { reason?: unknown } | undefined)?.reason;
      if (reason === "no_worktree") continue; // another drone may hold the session's worktree
      throw new UserError(relayedCode(answer.error.code), answer.error.message, {
        details: answer.error.details,
      });
    }
    throw new SystemError(
      "no_drone_online",
      `No online drone holds this session's worktree of project "${project.name}": start the drone that ran the session's turns, then revert again`,
    );
  }
}
