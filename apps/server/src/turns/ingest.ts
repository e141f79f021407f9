// Drone → server: batches of numbered events, checkpoints and lease renewals for the turns a
// drone holds. A batch is checked against the turn's seq counter in Redis (held by this drone?
// continuing the sequence?), stored through the group-commit writer, relayed once stored, applied
// to the ChatTurn by the accumulator, and acknowledged. A re-sent batch stores nothing twice.

import type { Models } from "@gadget/db";
import {
  type Heartbeat,
  type TurnCheckpoint,
  type TurnEvent,
  type TurnEventBatch,
  UserError,
  validationError,
} from "@gadget/protocol";
import { z } from "zod";
import type { Metrics } from "../metrics/metrics.ts";
import type { ProviderQuirks } from "../providers/provider-quirks.ts";
import type { StorageHealth } from "../storage/health.ts";
import { unavailableError } from "../storage/health.ts";
import type { LiveRelay } from "./live/live-relay.ts";
import type { EventWriter } from "./store/event-writer.ts";
import type { AppendOutcome, SeqStore } from "./store/seq-store.ts";
import type { TurnAccumulator } from "./store/turn-accumulator.ts";
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

/** Events whose answer to the drone waits until the turn shows them. */
function mustBeApplied(event: TurnEvent): boolean {
  return event.type === "done" || event.type === "approval";
}

export interface TurnIngestDependencies {
  models: Models;
  seqs: SeqStore;
  eventWriter: EventWriter;
  accumulator: TurnAccumulator;
  relay: LiveRelay;
  store: TurnStore;
  turnIndex: TurnIndex;
  health: StorageHealth;
  metrics: Metrics;
  /** Where quirks a drone learned (`provider_adapted`) are remembered on the turn's provider. */
  quirks: ProviderQuirks;
  /** How long a turn's lease lasts past a drone's last word (config `droneGraceMs`). */
  droneGraceMs: number;
}

/** What a drone sends about the turns it holds, taken in: events, checkpoints, lease renewals. */
export class TurnIngest {
  /** Session and user of turns this process ingests for (immutable, so cached). */
  private readonly turnMeta = new Map<string, { sessionId: string; userId: string }>();
  /** Per turn, the last ingested batch still being applied and relayed (keeps seq order). */
  private readonly turnChains = new Map<string, Promise<void>>();

  constructor(private readonly dependencies: TurnIngestDependencies) {}

  private async meta(turnId: string, known: { sessionId: string; userId: string } | null) {
    let meta = this.turnMeta.get(turnId) ?? known;
    if (!meta) {
      const turn = await this.dependencies.models.ChatTurn.findById(turnId)
        .select({ session: 1, user: 1 })
        .lean();
      if (!turn) throw new UserError("not_found", `Turn ${turnId} not found`);
      meta = { sessionId: String(turn.session), userId: String(turn.user) };
    }
    if (!this.turnMeta.has(turnId)) {
      if (this.turnMeta.size > 10_000) this.turnMeta.clear();
      this.turnMeta.set(turnId, meta);
    }
    return meta;
  }

  /**
   * A failure of `work` as the drone should see it: an outage of the database or Redis becomes the
   * retryable `unavailable` (the drone keeps the events and sends them again); anything else is
   * the batch's own error.
   */
  private asAnswer(error: unknown, turnId: string, userId?: string): unknown {
    const down = this.dependencies.health.failed(error, turnId, userId);
    return down ? unavailableError(down, error) : error;
  }

  /**
   * Stores a batch; answers the highest seq of the turn once its events are stored (and, for an
   * approval or `done`, applied). A batch re-sent after any failure stores nothing twice and is
   * applied once: what is applied is decided by the counter's `applied` cursor, not by `last`.
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
    // Batches of a turn are checked in the order they arrived (a drone pipelines them).
    const earlier = this.turnChains.get(`check:${turnId}`) ?? Promise.resolve();
    const checked = earlier.then(() => {
      const ends = incoming.some((event) => event.type === "done");
      return this.dependencies.seqs.append(
        turnId,
        droneId,
        incoming[0]!.seq,
        incoming.length,
        ends,
      );
    });
    const checkDone = checked.then(
      () => undefined,
      () => undefined,
    );
    this.turnChains.set(`check:${turnId}`, checkDone);
    void checkDone.then(() => {
      if (this.turnChains.get(`check:${turnId}`) === checkDone)
        this.turnChains.delete(`check:${turnId}`);
    });
    let outcome: AppendOutcome;
    let meta: { sessionId: string; userId: string };
    try {
      outcome = await checked;
      this.dependencies.health.succeeded("redis");
      if (outcome.status === "not_held") {
        throw notHeld(turnId);
      }
      if (outcome.status === "gap") {
        throw new UserError(
          "conflict",
          `Events of turn ${turnId} must continue at seq ${outcome.last + 1}; resend from there`,
          { details: { lastSeq: outcome.last } },
        );
      }
      // The counter carries the turn's session and user; older counters need one read.
      meta = await this.meta(turnId, outcome.meta);
    } catch (error) {
      throw this.asAnswer(error, turnId);
    }
    const appliedBefore = outcome.applied;
    const now = new Date();
    const events = incoming.map((event) => ({ ...event, at: event.at ?? now }) as TurnEvent);
    // All of the batch is written (duplicates are ignored by the unique index), so a batch whose
    // earlier write failed is stored when the drone sends it again. Awaited below in the turn's
    // chain; the handler here keeps a failure from ever being an unhandled rejection.
    const written = this.dependencies.eventWriter.write(turnId, events);
    written.catch(() => undefined);
    // Batches of one turn are written concurrently but applied and relayed in seq order.
    const previous = this.turnChains.get(turnId) ?? Promise.resolve();
    const relayed = previous.then(async () => {
      await written;
      // Above what is applied (here or by any server) and what this server has taken to apply.
      const floor = Math.max(appliedBefore, this.dependencies.accumulator.handedOff(turnId));
      const fresh = events.filter((event) => event.seq > floor);
      if (fresh.length === 0) {
        // Sent again after the turn's update failed: the answer waits until it is applied.
        if (this.dependencies.accumulator.waiting(turnId) && events.some(mustBeApplied)) {
          await this.dependencies.accumulator.flushStrictly(turnId);
        }
        return;
      }
      this.dependencies.metrics.eventsIngested.inc(fresh.length);
      // Remembered before the turn shows `done`: the next turn's work order already carries it.
      await this.rememberQuirks(turnId, fresh);
      const relay = () =>
        this.dependencies.relay
          .publish({ turnId, sessionId: meta.sessionId, userId: meta.userId, events: fresh })
          // Stored events reach browsers anyway: a missed relay is caught up from the store.
          .catch((error: unknown) => {
            this.dependencies.health.failed(error, turnId);
          });
      const { applied } = await this.dependencies.accumulator.add(turnId, fresh, relay);
      // The ack waits for what the events changed on the turn (an approval, `done`).
      await applied;
    });
    const settled = relayed.catch(() => undefined);
    this.turnChains.set(turnId, settled);
    void settled.then(() => {
      if (this.turnChains.get(turnId) === settled) this.turnChains.delete(turnId);
    });
    try {
      await relayed;
    } catch (error) {
      throw this.asAnswer(error, turnId, meta.userId);
    }
    return { lastSeq: outcome.last };
  }

  private async rememberQuirks(turnId: string, events: TurnEvent[]): Promise<void> {
    const learned = events.flatMap((event) =>
      event.type === "provider_adapted" ? [event.data] : [],
    );
    if (learned.length === 0) return;
    try {
      await this.dependencies.quirks.rememberForTurn(turnId, learned);
    } catch (error) {
      // Not worth failing the batch: the provider refuses again and the drone adapts again.
      this.dependencies.health.failed(error, turnId);
    }
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
