// How a drone's batch of numbered events is appended to its turn (TurnStore.append): checked
// against the turn's seq counter in Redis in the order batches arrived, stored through the
// group-commit writer, then — in seq order per turn — announced, handed to the accumulator and let
// go live. A batch sent again after any failure stores nothing twice and is applied once.
import type { Models } from "@gadget/db";
import { type TurnEvent, type TurnEventBatch, UserError } from "@gadget/protocol";
import { type StorageHealth, unavailableError } from "../../storage/health.ts";
import type { EventWriter } from "./event-writer.ts";
import type { AppendOutcome, SeqStore } from "./seq-store.ts";
import type { TurnAccumulator } from "./turn-accumulator.ts";

/** Stored events of one turn, with the turn's session and user (who may see them). */
export interface StoredEvents {
  turnId: string;
  sessionId: string;
  userId: string;
  events: TurnEvent[];
}

/** What appending a drone's batch came to. */
export type DroneAppend =
  | { status: "stored"; lastSeq: number }
  /** The drone does not hold the turn (it ended, or is another drone's, or does not exist). */
  | { status: "not_held" }
  /** The batch skips ahead: the turn's events must continue after `lastSeq`. */
  | { status: "gap"; lastSeq: number };

/** Events whose answer to the drone waits until the turn shows them. */
function mustBeApplied(event: TurnEvent): boolean {
  return event.type === "done" || event.type === "approval";
}

export interface DroneBatchesDependencies {
  models: Models;
  seqs: SeqStore;
  eventWriter: EventWriter;
  accumulator: TurnAccumulator;
  health: StorageHealth;
  /** A drone's new events are stored, not yet applied to the turn (TurnStore's `appended`). */
  appended: (stored: StoredEvents) => Promise<void>;
  /** Stored events may be shown now (TurnStore's `live`). */
  live: (stored: StoredEvents) => Promise<void>;
}

export class DroneBatches {
  /** Session and user of turns this process appends to (immutable, so cached). */
  private readonly turnMeta = new Map<string, { sessionId: string; userId: string }>();
  /** Per turn, the last batch still being checked, or applied and let go live (keeps order). */
  private readonly turnChains = new Map<string, Promise<void>>();

  constructor(private readonly dependencies: DroneBatchesDependencies) {}

  /**
   * Appends `events` (consecutive seqs) of a drone to `turnId`; answers once they are stored and,
   * for an approval or `done`, applied. An outage of the database or Redis is `unavailable`: the
   * drone keeps the events and sends them again. What is applied is decided by the counter's
   * `applied` cursor, not by `last`, so a batch sent again is applied once.
   */
  async append(
    droneId: string,
    turnId: string,
    incoming: TurnEventBatch["events"],
  ): Promise<DroneAppend> {
    const { seqs, health, eventWriter, accumulator } = this.dependencies;
    // Batches of a turn are checked in the order they arrived (a drone pipelines them).
    const checked = this.chain(`check:${turnId}`, () =>
      seqs.append(
        turnId,
        droneId,
        incoming[0]!.seq,
        incoming.length,
        incoming.some((event) => event.type === "done"),
      ),
    );
    let outcome: AppendOutcome;
    let meta: { sessionId: string; userId: string };
    try {
      outcome = await checked;
      health.succeeded("redis");
      if (outcome.status === "not_held") return { status: "not_held" };
      if (outcome.status === "gap") return { status: "gap", lastSeq: outcome.last };
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
    const written = eventWriter.write(turnId, events, meta.userId);
    written.catch(() => undefined);
    // Batches of one turn are written concurrently but applied and let go live in seq order.
    const done = this.chain(turnId, async () => {
      await written;
      // Above what is applied (here or by any server) and what this server has taken to apply.
      const floor = Math.max(appliedBefore, accumulator.handedOff(turnId));
      const fresh = events.filter((event) => event.seq > floor);
      if (fresh.length === 0) {
        // Sent again after the turn's update failed: the answer waits until it is applied.
        if (accumulator.waiting(turnId) && events.some(mustBeApplied)) {
          await accumulator.flushStrictly(turnId);
        }
        return;
      }
      const stored = { turnId, ...meta, events: fresh };
      // Heard before the turn shows `done` (a quirk the drone learned is in the next work order).
      await this.dependencies.appended(stored);
      const { applied } = await accumulator.add(turnId, fresh, () =>
        this.dependencies.live(stored),
      );
      // The answer waits for what the events changed on the turn (an approval, `done`).
      await applied;
    });
    try {
      await done;
    } catch (error) {
      throw this.asAnswer(error, turnId, meta.userId);
    }
    return { status: "stored", lastSeq: outcome.last };
  }

  /** Runs `work` after the last work chained under `key`; the chain forgets a settled tail. */
  private chain<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.turnChains.get(key) ?? Promise.resolve();
    const result = previous.then(work);
    const settled = result.then(
      () => undefined,
      () => undefined,
    );
    this.turnChains.set(key, settled);
    void settled.then(() => {
      if (this.turnChains.get(key) === settled) this.turnChains.delete(key);
    });
    return result;
  }

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
   * A failure as the drone should see it: an outage of the database or Redis becomes the
   * retryable `unavailable`; anything else is the batch's own error.
   */
  private asAnswer(error: unknown, turnId: string, userId?: string): unknown {
    const { health } = this.dependencies;
    const down = health.failed(error, turnId, userId);
    if (down) return unavailableError(down, error);
    // Already this server's `unavailable` (the write retried and gave up): the turn waits too.
    health.relayed(error, turnId, userId);
    return error;
  }
}
