// What an earlier run of the drone left in its journal. A turn that ended there (its `done` is
// journaled) has its unacknowledged events sent again, each turn's by its own sender. A turn cut
// by the restart is only named to the server (the handshake's `journaledTurns`), which gives it
// back from its last stored checkpoint: its unsent events are superseded by that rerun, never
// sent, so the cut pass's text is never stored twice (decision 0046).
import type { EngineLogger } from "@gadget/agent";
import type { EventJournal, TurnJournal } from "./journal.ts";
import { type DroneSocket, EventSender, type SenderOptions } from "./sender.ts";

export class LeftoverSenders {
  private readonly senders = new Map<string, EventSender>();
  /** Journals of turns the restart cut, until the server has heard of them. */
  private readonly cut = new Map<string, TurnJournal>();
  private loaded: Promise<void> = Promise.resolve();

  constructor(
    private readonly socket: DroneSocket,
    private readonly options: SenderOptions,
  ) {}

  /** Starts a sender for every ended turn's journal left on disk but those of `running` turns. */
  load(journal: EventJournal, running: (turnId: string) => boolean): Promise<void> {
    this.loaded = this.read(journal, running);
    return this.loaded;
  }

  private async read(journal: EventJournal, running: (turnId: string) => boolean): Promise<void> {
    for (const leftover of await journal.leftovers()) {
      if (running(leftover.turnId)) continue;
      if (!leftover.finished) {
        this.cut.set(leftover.turnId, leftover);
        continue;
      }
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

  /**
   * Turns the restart cut, once the journal is read, for the handshake: the server may give them
   * back to this drone.
   */
  async cutTurns(): Promise<string[]> {
    await this.loaded;
    return [...this.cut.keys()];
  }

  /**
   * The server has heard of the cut turns (the connection is reconciled): those it gives back
   * come as work orders with their own journal; the others ended on the server. Their files go.
   */
  settleCut(): void {
    for (const leftover of this.cut.values()) leftover.discard();
    this.cut.clear();
  }

  /** The turn was dispatched again: what an earlier run left for it is superseded. */
  supersede(turnId: string): void {
    this.cut.delete(turnId);
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
