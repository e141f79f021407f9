// Sends a turn's journaled events to the server in order, one batch in flight at a time, and
// drops them from the journal only when the server acknowledges they are stored.
import type {
  ApiErrorBody,
  DroneClientToServerEvents,
  DroneServerToClientEvents,
} from "@gadget/protocol";
import type { Socket } from "socket.io-client";
import type { TurnJournal } from "./journal.ts";

export type DroneSocket = Socket<DroneServerToClientEvents, DroneClientToServerEvents>;

export interface SenderOptions {
  /** Events per batch; default 200. */
  batchSize?: number;
  /** How long to wait for the server's acknowledgement; default 15 s. */
  ackTimeoutMs?: number;
  /** The server refused the turn's events for good (e.g. the turn now belongs to another drone). */
  onRejected?: (error: ApiErrorBody["error"]) => void;
}

/** Streams one turn's journal to the server. Call `notify()` after appending, and on reconnect. */
export class EventSender {
  private running = false;
  private rejected = false;
  private waiters: Array<() => void> = [];

  constructor(
    private readonly socket: DroneSocket,
    readonly journal: TurnJournal,
    private readonly options: SenderOptions = {},
  ) {}

  /** Starts sending if there is something to send and nothing in flight. */
  notify(): void {
    if (this.running || this.rejected) return;
    this.running = true;
    void this.run().finally(() => {
      this.running = false;
      if (this.journal.pending().length === 0) this.resolveWaiters();
      // Something may have been appended while the last batch was in flight.
      else if (this.socket.connected && !this.rejected) this.notify();
    });
  }

  /** Resolves when every event appended so far is acknowledged (or the server refused the turn). */
  drained(): Promise<void> {
    if (this.journal.pending().length === 0 || this.rejected) return Promise.resolve();
    return new Promise((resolve) => {
      this.waiters.push(resolve);
      this.notify();
    });
  }

  /** Stops sending for good (the turn was dispatched again; the server's numbering wins). */
  stop(): void {
    this.rejected = true;
    this.resolveWaiters();
  }

  get isRejected(): boolean {
    return this.rejected;
  }

  private resolveWaiters(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }

  private async run(): Promise<void> {
    const batchSize = this.options.batchSize ?? 200;
    while (this.socket.connected && !this.rejected) {
      const batch = this.journal.pending(batchSize);
      if (batch.length === 0) return;
      // Only what is on disk goes out, so a crash can never lose an event the server has not got.
      await this.journal.flushed();
      let ack: Awaited<ReturnType<DroneSocket["emitWithAck"]>>;
      try {
        ack = await this.socket
          .timeout(this.options.ackTimeoutMs ?? 15_000)
          .emitWithAck("turn_events", { turnId: this.journal.turnId, events: batch });
      } catch {
        // No ack in time: the connection is probably gone; a reconnect calls notify() again.
        if (!this.socket.connected) return;
        continue;
      }
      const result = ack as { ok: true; lastSeq: number } | ({ ok: false } & ApiErrorBody);
      if (result.ok) {
        this.journal.acknowledge(result.lastSeq);
      } else {
        this.rejected = true;
        this.resolveWaiters();
        this.options.onRejected?.(result.error);
        return;
      }
    }
  }
}
