// Drone → server: batches of numbered events, checkpoints and lease renewals for the turns a
// drone holds. A batch goes to TurnStore.append (the one way a drone's events are written) and is
// acknowledged; checkpoints and renewals are mutations of turns the drone still holds.

import {
  type Heartbeat,
  type TurnCheckpoint,
  type TurnEventBatch,
  UserError,
  validationError,
} from "@gadget/protocol";
import { z } from "zod";
import type { SeqStore } from "./store/seq-store.ts";
import type { TurnIndex } from "./store/turn-index.ts";
import type { TurnStore } from "./store/turn-store.ts";
import { isHeldBy } from "./turn-service.ts";

/**
 * One answer whether the turn finished, is another drone's, another user's or does not exist: a
 * drone learns nothing about turns that are not its own.
 */
function notHeld(turnId: string) {
  return new UserError("forbidden", `This drone does not hold turn ${turnId}; stop working on it`, {
    details: { turnId },
  });
}

export interface TurnIngestDependencies {
  seqs: SeqStore;
  store: TurnStore;
  turnIndex: TurnIndex;
  /** How long a turn's lease lasts past a drone's last word (config `droneGraceMs`). */
  droneGraceMs: number;
}

/** What a drone sends about the turns it holds, taken in: events, checkpoints, lease renewals. */
export class TurnIngest {
  constructor(private readonly dependencies: TurnIngestDependencies) {}

  /**
   * Appends a batch to its turn (TurnStore.append); answers the highest seq of the turn once its
   * events are stored (and, for an approval or `done`, applied). A batch re-sent after any
   * failure stores nothing twice and is applied once.
   */
  async ingestBatch(droneId: string, batch: TurnEventBatch): Promise<{ lastSeq: number }> {
    const incoming = batch.events;
    for (let index = 1; index < incoming.length; index++) {
      if (incoming[index]!.seq !== incoming[index - 1]!.seq + 1) {
        throw validationError(
          new z.ZodError([
            {
              code: "custom",
              path: ["events", index, "seq"],
              message: "seqs in a batch must be consecutive",
              input: incoming[index]!.seq,
            },
          ]),
          "event batch",
        );
      }
    }
    const { turnId } = batch;
    const outcome = await this.dependencies.store.append(droneId, turnId, incoming);
    if (outcome.status === "not_held") throw notHeld(turnId);
    if (outcome.status === "gap") {
      throw new UserError(
        "conflict",
        `Events of turn ${turnId} must continue at seq ${outcome.lastSeq + 1}; resend from there`,
        { details: { lastSeq: outcome.lastSeq } },
      );
    }
    return { lastSeq: outcome.lastSeq };
  }

  /** Stores the turn's messages so far, for resuming it anywhere. */
  async storeCheckpoint(droneId: string, checkpoint: TurnCheckpoint): Promise<void> {
    const outcome = await this.dependencies.store.mutate(checkpoint.turnId, (turn) => {
      if (!isHeldBy(turn, droneId)) throw notHeld(checkpoint.turnId);
      return { set: { messages: checkpoint.messages, resumeState: checkpoint.state ?? null } };
    });
    if (!outcome) throw notHeld(checkpoint.turnId);
  }

  /**
   * Renews the lease of every turn the drone says it runs; answers the ones it must stop
   * (finished, cancelled, interrupted, or held by another drone).
   */
  async renewLeases(
    droneId: string,
    beat: Pick<Heartbeat, "activeTurns">,
    options: { force?: boolean } = {},
  ): Promise<string[]> {
    const stop: string[] = [];
    const grace = this.dependencies.droneGraceMs;
    let turnIds = beat.activeTurns;
    if (!options.force && turnIds.length > 0) {
      // Most heartbeats change nothing: Redis shows the drone still holds the turn, no cancel is
      // pending and more than half the lease is left. Only the others read the turn (under its lock).
      const [holders, leases] = await Promise.all([
        this.dependencies.seqs.holders(turnIds),
        this.dependencies.turnIndex.leases(turnIds),
      ]);
      const renewAfter = Date.now() + grace / 2;
      turnIds = turnIds.filter((_, index) => {
        const held = holders[index];
        const lease = leases[index];
        return !(held?.holder === droneId && !held.cancel && lease && lease > renewAfter);
      });
    }
    for (const turnId of turnIds) {
      const outcome = await this.dependencies.store.mutate(turnId, (turn) => {
        if (!isHeldBy(turn, droneId) || turn.cancelRequestedAt) return { result: false };
        // Renew once half the lease is used, not on every heartbeat: fewer writes, same guarantee.
        const left = (turn.leaseExpiresAt?.getTime() ?? 0) - Date.now();
        if (!options.force && left > grace / 2) return { result: true };
        return { set: { leaseExpiresAt: new Date(Date.now() + grace) }, result: true };
      });
      if (!outcome?.result) stop.push(turnId);
    }
    return stop;
  }
}
