// Events an earlier run of the drone journaled but the server never acknowledged: sent again on
// start, each turn's by its own sender, until a new dispatch of that turn supersedes them.
import type { EngineLogger } from "@gadget/agent";
import type { EventJournal } from "./journal.ts";
import { type DroneSocket, EventSender, type SenderOptions } from "./sender.ts";

export class LeftoverSenders {
  private readonly senders = new Map<string, EventSender>();

  constructor(
    private readonly socket: DroneSocket,
    private readonly options: SenderOptions,
  ) {}

  /** Starts a sender for every journal left on disk but those of `running` turns. */
  async load(journal: EventJournal, running: (turnId: string) => boolean): Promise<void> {
    for (const leftover of await journal.leftovers()) {
      if (running(leftover.turnId)) continue;
      if (leftover.pending().length === 0) {
        await leftover.remove();
        continue;
      }
      const sender = new EventSender(this.socket, leftover, this.options);
      this.senders.set(leftover.turnId, sender);
      void sender.drained().then(async () => {
        if (this.senders.get(leftover.turnId) !== sender) return; // superseded by a new dispatch
        this.senders.delete(leftover.turnId);
        await leftover.remove();
      });
    }
  }

  /** The turn was dispatched again: what an earlier run left for it is superseded. */
  supersede(turnId: string): void {
    this.senders.get(turnId)?.stop();
    this.senders.delete(turnId);
  }

  /** Sends what is waiting (after a reconnect). */
  notify(): void {
    for (const sender of this.senders.values()) sender.notify();
  }

  /** Resolves once every leftover is acknowledged (or refused). */
  drained(): Promise<unknown> {
    return Promise.all([...this.senders.values()].map((sender) => sender.drained()));
  }

  get size(): number {
    return this.senders.size;
  }
}

/** `logger` with `fields` on every line. */
export function withFields(logger: EngineLogger, fields: Record<string, unknown>): EngineLogger {
  return {
    debug: (object, message) => logger.debug({ ...fields, ...object }, message),
    info: (object, message) => logger.info({ ...fields, ...object }, message),
    warn: (object, message) => logger.warn({ ...fields, ...object }, message),
    error: (object, message) => logger.error({ ...fields, ...object }, message),
  };
}
