// Turn updates without a write per event: stored drone events wait here and are applied to their
// ChatTurn together, every turnFlushIntervalMs, or at once when a browser must see the change
// with the events (approval, done). Streamed text (tokens, thinking, tool output) changes nothing
// on a running turn but its lastSeq and duration, so on its own it waits `quietIntervals` times
// longer: on FerretDB every ChatTurn write takes the one SQLite writer from the event inserts.
import type { TurnEvent, TurnStatus } from "@gadget/protocol";
import { isFinalTurnStatus } from "@gadget/protocol";
import type { ServerContext } from "../context.ts";

interface Entry {
  events: TurnEvent[];
  timer: NodeJS.Timeout | null;
  /** When the timer fires. */
  due: number;
  chain: Promise<void>;
  /** The turn's status after the last flush; unknown before the first. */
  status: TurnStatus | null;
}

const statusChanging = new Set(["approval", "done", "dispatched"]);
/** Events that leave a running turn's fields as they are (but lastSeq and duration). */
const quiet = new Set(["token", "thinking", "tool_output", "debug"]);
/** How many flush intervals quiet events may wait when nothing else is waiting. */
const quietIntervals = 10;

export class TurnAccumulator {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly context: ServerContext) {}

  /**
   * Queues stored events. `applied` resolves once they are applied to the turn (at once for those
   * a browser must see applied: approvals, done, tool events ending an approval; else when the
   * timer flushes, so the caller should not wait for it). `beforeRelay` says the caller must wait
   * for `applied` before relaying them: a browser that sees an approval can decide it, one that
   * sees `done` reads a finished turn.
   */
  add(turnId: string, events: TurnEvent[]): { applied: Promise<void>; beforeRelay: boolean } {
    let entry = this.entries.get(turnId);
    if (!entry) {
      entry = { events: [], timer: null, due: 0, chain: Promise.resolve(), status: null };
      this.entries.set(turnId, entry);
    }
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
    if (beforeRelay) return { applied: this.flush(turnId), beforeRelay };
    // The first events after dispatch move the turn to `processing` within half an interval to
    // two and a half, not at once: the events themselves are live already, and a hundred turns
    // starting together would otherwise queue a hundred turn writes (and pushes) in front of
    // their first events. (Who must know sooner that a drone began, asks the seq counter:
    // `TurnService.hasStarted`.)
    const starting = entry.status === null || entry.status === "dispatched";
    const interval = this.context.config.turnFlushIntervalMs;
    // Spread: turns that started together would otherwise flush together, a burst of turn writes
    // on one writer.
    const wait = starting
      ? interval * (0.5 + 2 * Math.random())
      : events.every((event) => quiet.has(event.type))
        ? interval * quietIntervals * (0.75 + Math.random() / 2)
        : interval * (0.5 + Math.random());
    this.schedule(turnId, entry, wait);
    return { applied: Promise.resolve(), beforeRelay: false };
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

  /** Applies what is waiting for one turn. */
  flush(turnId: string): Promise<void> {
    const entry = this.entries.get(turnId);
    if (!entry) return Promise.resolve();
    if (entry.timer) clearTimeout(entry.timer);
    entry.timer = null;
    entry.chain = entry.chain.then(async () => {
      const events = entry.events.splice(0);
      if (events.length === 0) return;
      try {
        const outcome = await this.context.store.mutate(turnId, () => ({ storedEvents: events }));
        entry.status = outcome?.turn.status ?? entry.status;
        if (!outcome || isFinalTurnStatus(outcome.turn.status)) {
          if (entry.events.length === 0) this.entries.delete(turnId);
        }
      } catch (error) {
        // Put them back: the next flush tries again (the events themselves are already stored).
        entry.events.unshift(...events);
        this.context.logger.error({ err: error, turnId }, "turn update failed");
        this.schedule(turnId, entry, this.context.config.turnFlushIntervalMs);
      }
    });
    return entry.chain;
  }

  /** Applies everything waiting (shutdown). */
  async flushAll(): Promise<void> {
    await Promise.all([...this.entries.keys()].map((turnId) => this.flush(turnId)));
  }
}
