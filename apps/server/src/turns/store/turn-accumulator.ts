// Turn updates without a write per event: stored drone events wait here and are applied to their
// ChatTurn together, every turnFlushIntervalMs, or at once when a browser must see the change
// with the events (approval, done). Streamed text (tokens, thinking, tool output) changes nothing
// on a running turn but its lastSeq and duration, so on its own it waits `quietIntervals` times
// longer: on FerretDB every ChatTurn write takes the one SQLite writer from the event inserts.

import type { ChatTurnDocument } from "@gadget/db";
import type { Logger } from "@gadget/logging";
import type { TurnEvent, TurnStatus } from "@gadget/protocol";
import { isFinalTurnStatus, SystemError } from "@gadget/protocol";
import type { StorageHealth } from "../../storage/health.ts";
import type { SeqStore } from "./seq-store.ts";

interface Entry {
  events: TurnEvent[];
  timer: NodeJS.Timeout | null;
  /** When the timer fires. */
  due: number;
  chain: Promise<boolean>;
  /** The turn's status after the last flush; unknown before the first. */
  status: TurnStatus | null;
  /** The highest seq handed to this accumulator (applied, or waiting here). */
  handedOff: number;
  /** Called once the events handed with them are applied (going live waits for that). */
  onApplied: Array<() => Promise<void>>;
}

const statusChanging = new Set(["approval", "done", "dispatched"]);
/** Events that leave a running turn's fields as they are (but lastSeq and duration). */
const quiet = new Set(["token", "thinking", "tool_output", "debug"]);
/** How many flush intervals quiet events may wait when nothing else is waiting. */
const quietIntervals = 10;

export interface TurnAccumulatorDependencies {
  /** Applies stored events to their ChatTurn (under its lock); answers the turn as written. */
  apply: (turnId: string, events: TurnEvent[]) => Promise<ChatTurnDocument | null>;
  seqs: SeqStore;
  health: StorageHealth;
  logger: Logger;
  /** How often a running turn's waiting events are applied (config `turnFlushIntervalMs`). */
  flushIntervalMs: number;
}

export class TurnAccumulator {
  private readonly entries = new Map<string, Entry>();
  private readonly apply: TurnAccumulatorDependencies["apply"];
  private readonly seqs: SeqStore;
  private readonly health: StorageHealth;
  private readonly logger: Logger;
  private readonly flushIntervalMs: number;

  constructor({ apply, seqs, health, logger, flushIntervalMs }: TurnAccumulatorDependencies) {
    this.apply = apply;
    this.seqs = seqs;
    this.health = health;
    this.logger = logger;
    this.flushIntervalMs = flushIntervalMs;
  }

  /**
   * Queues stored events and lets them go live (`live`): at once, or — for what a browser must see
   * applied (an approval it can decide, a `done` after which it reads a finished turn) — once they
   * are applied. `applied` resolves when those are applied, and rejects with `unavailable` if the
   * database did not take them (they stay here, are retried, and go live when applied); for
   * other events it resolves at once (the timer applies them).
   */
  async add(
    turnId: string,
    events: TurnEvent[],
    live: () => Promise<void>,
  ): Promise<{ applied: Promise<void> }> {
    let entry = this.entries.get(turnId);
    if (!entry) {
      entry = {
        events: [],
        timer: null,
        due: 0,
        chain: Promise.resolve(true),
        status: null,
        handedOff: 0,
        onApplied: [],
      };
      this.entries.set(turnId, entry);
    }
    for (const event of events) entry.handedOff = Math.max(entry.handedOff, event.seq);
    for (const event of events) {
      const last = entry.events[entry.events.length - 1];
      // A run of streamed text changes the turn as its last event does (lastSeq, `processing`):
      // only that one waits here, not ten seconds of tokens the collector would have to keep.
      if (last && quiet.has(last.type) && quiet.has(event.type)) {
        entry.events[entry.events.length - 1] = event;
      } else {
        entry.events.push(event);
      }
    }
    const beforeRelay =
      (entry.status === "awaiting_approval" &&
        events.some((event) => event.type.startsWith("tool_"))) ||
      events.some((event) => statusChanging.has(event.type));
    if (beforeRelay) {
      entry.onApplied.push(live);
      return { applied: this.flushStrictly(turnId) };
    }
    await live();
    // The first events after dispatch move the turn to `processing` within half an interval to
    // two and a half, not at once: the events themselves are live already, and a hundred turns
    // starting together would otherwise queue a hundred turn writes (and pushes) in front of
    // their first events. (Who must know sooner that a drone began, asks the seq counter:
    // `TurnService.hasStarted`.)
    const starting = entry.status === null || entry.status === "dispatched";
    const interval = this.flushIntervalMs;
    // Spread: turns that started together would otherwise flush together, a burst of turn writes
    // on one writer.
    const wait = starting
      ? interval * (0.5 + 2 * Math.random())
      : events.every((event) => quiet.has(event.type))
        ? interval * quietIntervals * (0.75 + Math.random() / 2)
        : interval * (0.5 + Math.random());
    this.schedule(turnId, entry, wait);
    return { applied: Promise.resolve() };
  }

  /** Flushes within `wait` ms: keeps an earlier timer, replaces a later one. */
  private schedule(turnId: string, entry: Entry, wait: number): void {
    const due = Date.now() + wait;
    if (entry.timer && entry.due <= due) return;
    if (entry.timer) clearTimeout(entry.timer);
    entry.due = due;
    entry.timer = setTimeout(() => {
      entry.timer = null;
      void this.flush(turnId);
    }, wait);
  }

  /** The highest seq of `turnId` this process has taken to apply (0 if none). */
  handedOff(turnId: string): number {
    return this.entries.get(turnId)?.handedOff ?? 0;
  }

  /** Whether events of `turnId` wait here to be applied. */
  waiting(turnId: string): boolean {
    return (this.entries.get(turnId)?.events.length ?? 0) > 0;
  }

  /** Applies what is waiting for one turn; a failure is retried later (never rejects). */
  async flush(turnId: string): Promise<void> {
    await this.run(turnId);
  }

  /**
   * Applies what is waiting for one turn; rejects with `unavailable` if it could not (the events
   * stay and are retried), so a drone's acknowledgement means applied.
   */
  async flushStrictly(turnId: string): Promise<void> {
    if (!(await this.run(turnId))) {
      throw new SystemError(
        "unavailable",
        "The database did not take the turn's update; send the batch again",
      );
    }
  }

  /** One flush in the turn's chain; true when nothing is left waiting. */
  private run(turnId: string): Promise<boolean> {
    const entry = this.entries.get(turnId);
    if (!entry) return Promise.resolve(true);
    if (entry.timer) clearTimeout(entry.timer);
    entry.timer = null;
    entry.chain = entry.chain.then(async () => {
      const events = entry.events.splice(0);
      const callbacks = entry.onApplied.splice(0);
      if (events.length === 0) return true;
      try {
        const turn = await this.apply(turnId, events);
        this.health.succeeded("database");
        entry.status = turn?.status ?? entry.status;
        const lastSeq = events[events.length - 1]!.seq;
        // Ahead of a lost Redis this only moves a cursor a rebuild recomputes from the turn.
        await this.seqs.markApplied(turnId, lastSeq).catch(() => undefined);
        if (!turn || isFinalTurnStatus(turn.status)) {
          if (entry.events.length === 0) this.entries.delete(turnId);
        }
        for (const callback of callbacks) {
          await callback().catch((error: unknown) =>
            this.logger.warn({ err: error, turnId }, "relay after apply failed"),
          );
        }
        return entry.events.length === 0;
      } catch (error) {
        // Put them back: the next flush tries again (the events themselves are already stored).
        entry.events.unshift(...events);
        entry.onApplied.unshift(...callbacks);
        if (!this.health.failed(error, turnId)) {
          this.logger.error({ err: error, turnId }, "turn update failed");
        }
        this.schedule(turnId, entry, this.flushIntervalMs);
        return false;
      }
    });
    return entry.chain;
  }

  /** Applies everything waiting (shutdown). */
  async flushAll(): Promise<void> {
    await Promise.all([...this.entries.keys()].map((turnId) => this.flush(turnId)));
  }
}
