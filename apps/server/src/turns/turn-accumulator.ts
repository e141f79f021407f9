// Turn updates without a write per event: stored drone events wait here and are applied to their
// ChatTurn together, every turnFlushIntervalMs, or at once when they change the turn's status
// (approval, done, the first events after dispatch).
import type { TurnEvent, TurnStatus } from "@gadget/protocol";
import { isFinalTurnStatus } from "@gadget/protocol";
import type { ServerContext } from "../context.ts";

interface Entry {
  events: TurnEvent[];
  timer: NodeJS.Timeout | null;
  chain: Promise<void>;
  /** The turn's status after the last flush; unknown before the first. */
  status: TurnStatus | null;
}

const statusChanging = new Set(["approval", "done", "dispatched"]);

export class TurnAccumulator {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly context: ServerContext) {}

  /** Queues stored events; resolves once applied when they change the status, else at once. */
  add(turnId: string, events: TurnEvent[]): Promise<void> {
    let entry = this.entries.get(turnId);
    if (!entry) {
      entry = { events: [], timer: null, chain: Promise.resolve(), status: null };
      this.entries.set(turnId, entry);
    }
    entry.events.push(...events);
    const urgent =
      entry.status === null ||
      entry.status === "dispatched" ||
      (entry.status === "awaiting_approval" &&
        events.some((event) => event.type.startsWith("tool_"))) ||
      events.some((event) => statusChanging.has(event.type));
    if (urgent) return this.flush(turnId);
    entry.timer ??= setTimeout(() => {
      void this.flush(turnId);
    }, this.context.config.turnFlushIntervalMs);
    return Promise.resolve();
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
        entry.timer ??= setTimeout(() => {
          void this.flush(turnId);
        }, this.context.config.turnFlushIntervalMs);
      }
    });
    return entry.chain;
  }

  /** Applies everything waiting (shutdown). */
  async flushAll(): Promise<void> {
    await Promise.all([...this.entries.keys()].map((turnId) => this.flush(turnId)));
  }
}
