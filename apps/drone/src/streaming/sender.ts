// Sends a turn's journaled events to the server in order, one batch in flight at a time, and
// drops them from the journal only when the server acknowledges they are stored. An outage of the
// server's database or Redis (answer `unavailable`, or no answer in time) is waited out with
// capped, jittered backoff for up to `patienceMs`; only a final answer (not the holder, unknown
// turn) or the end of patience stops the turn. Batches stay under a byte budget, and an event the
// server cannot take (too large to send, or refused as invalid) is replaced by an `error` event of
// the same seq and stops the turn: never a batch sent again and again, never a reconnect loop.
import {
  type ApiErrorBody,
  agentEvent,
  type DroneClientToServerEvents,
  type DroneServerToClientEvents,
} from "@gadget/protocol";
import type { Socket } from "socket.io-client";
import type { TurnJournal, WireEvent } from "./journal.ts";

export type DroneSocket = Socket<DroneServerToClientEvents, DroneClientToServerEvents>;

export interface SenderOptions {
  /** Events per batch; default 200. */
  batchSize?: number;
  /** Bytes of events (as JSON) per batch, one event at least; default 1 MiB. */
  maxBatchBytes?: number;
  /**
   * Largest one event may be (as JSON); a larger one is replaced by an `error` event. Default
   * 1 MiB: far under the drone socket's 16 MiB message limit and a database document's 16 MB.
   */
  maxEventBytes?: number;
  /** How long to wait for the server's acknowledgement; default 15 s. */
  ackTimeoutMs?: number;
  /** How long the server may keep failing with retryable answers before the turn gives up; default 5 minutes. */
  patienceMs?: number;
  /**
   * Backoff between retries: from `retryDelayMs` (default 250) doubling to `maxRetryDelayMs`
   * (default 2 000), each wait 50–100 % of that. One batch per turn every 1–2 s costs a struggling
   * server little, and the turn streams again within about a second of its storage coming back.
   */
  retryDelayMs?: number;
  maxRetryDelayMs?: number;
  /**
   * Whether events may go out now; default: while the socket is connected. The drone also waits
   * for a new connection's `reconciled` message (its events may be renumbered by it).
   */
  canSend?: () => boolean;
  /** The sender is retrying (`since`) or back to normal (null): for the drone's status display. */
  onRetrying?: (since: Date | null, reason: string) => void;
  /** The server refused the turn's events for good (e.g. the turn now belongs to another drone). */
  onRejected?: (error: ApiErrorBody["error"]) => void;
  /** An event the server cannot take was replaced by an error event: the turn should stop. */
  onRefusedEvent?: (seq: number, reason: string) => void;
}

/** The JSON size of each event, measured once. */
const sizes = new WeakMap<WireEvent, number>();

function sizeOf(event: WireEvent): number {
  let size = sizes.get(event);
  if (size === undefined) {
    size = Buffer.byteLength(JSON.stringify(event));
    sizes.set(event, size);
  }
  return size;
}

/** Streams one turn's journal to the server. Call `notify()` after appending, and on reconnect. */
/** Answers that mean "try again later" rather than "stop". */
const retryableCodes = new Set(["unavailable", "internal", "rate_limited"]);

export class EventSender {
  private running = false;
  private rejected = false;
  private waiters: Array<() => void> = [];
  private storedWaiters: Array<{ seq: number; resolve: () => void }> = [];
  /** When the current run of failures began, or null. */
  private failingSince: number | null = null;
  private failures = 0;
  /** After an invalid batch: events go one at a time up to this seq, to find the one refused. */
  private singlyUntil = 0;

  constructor(
    private readonly socket: DroneSocket,
    readonly journal: TurnJournal,
    private readonly options: SenderOptions = {},
  ) {}

  private linked(): boolean {
    return this.options.canSend ? this.options.canSend() : this.socket.connected;
  }

  /** Starts sending if there is something to send and nothing in flight. */
  notify(): void {
    if (this.running || this.rejected) return;
    this.running = true;
    void this.run().finally(() => {
      this.running = false;
      if (this.journal.pending().length === 0) this.resolveWaiters();
      // Something may have been appended while the last batch was in flight.
      else if (this.linked() && !this.rejected) this.notify();
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

  /**
   * Resolves once the server has stored every event up to `seq` (or refused the turn), so what
   * follows them (a checkpoint) never reaches it before they do.
   */
  stored(seq: number): Promise<void> {
    if (this.journal.acknowledgedSeq >= seq || this.rejected) return Promise.resolve();
    return new Promise((resolve) => {
      this.storedWaiters.push({ seq, resolve });
      this.notify();
    });
  }

  /**
   * The journal's unsent events were renumbered from `nextSeq` (the server stored them up to
   * `storedUpTo`): what waits for one of them waits for its new number.
   */
  renumbered(storedUpTo: number, nextSeq: number): void {
    for (const waiter of this.storedWaiters) {
      if (waiter.seq > storedUpTo) waiter.seq += nextSeq - storedUpTo - 1;
    }
    this.resolveStored(this.journal.acknowledgedSeq);
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
    this.resolveStored(Number.POSITIVE_INFINITY);
  }

  /** Resolves the `stored()` waiters up to `seq`. */
  private resolveStored(seq: number): void {
    const ready = this.storedWaiters.filter((waiter) => waiter.seq <= seq);
    this.storedWaiters = this.storedWaiters.filter((waiter) => waiter.seq > seq);
    for (const waiter of ready) waiter.resolve();
  }

  private async run(): Promise<void> {
    while (this.linked() && !this.rejected) {
      const batch = this.nextBatch();
      if (batch.length === 0) return;
      // Only what is on disk goes out, so a crash can never lose an event the server has not got.
      await this.journal.flushed();
      let ack: Awaited<ReturnType<DroneSocket["emitWithAck"]>>;
      try {
        ack = await this.socket
          .timeout(this.options.ackTimeoutMs ?? 15_000)
          .emitWithAck("turn_events", { turnId: this.journal.turnId, events: batch });
      } catch {
        // No ack in time: the connection is gone (a reconnect calls notify() again), or the server
        // waits on its database; the batch goes again after a pause.
        if (!this.linked()) return;
        if (!(await this.retryLater("no answer in time"))) return;
        continue;
      }
      const result = ack as { ok: true; lastSeq: number } | ({ ok: false } & ApiErrorBody);
      if (result.ok) {
        if (this.failingSince !== null) this.options.onRetrying?.(null, "");
        this.failingSince = null;
        this.failures = 0;
        this.journal.acknowledge(result.lastSeq);
        this.resolveStored(this.journal.acknowledgedSeq);
      } else if (retryableCodes.has(result.error.code)) {
        if (!(await this.retryLater(result.error.message))) return;
      } else if (result.error.code === "validation_failed") {
        // One event of the batch is refused for what it holds: find it, then replace it.
        const only = batch.length === 1 ? (batch[0] as WireEvent) : null;
        if (only && only.type !== "error") this.replaceRefused(only, result.error.message);
        else if (!only) this.singlyUntil = (batch.at(-1) as WireEvent).seq;
        else {
          this.giveUp(result.error);
          return;
        }
      } else {
        this.giveUp(result.error);
        return;
      }
    }
  }

  /** The next events to send: in order, under the byte budget, oversized ones replaced first. */
  private nextBatch(): WireEvent[] {
    const maxEvents = this.options.batchSize ?? 200;
    const maxBytes = this.options.maxBatchBytes ?? 1024 * 1024;
    const maxEvent = this.options.maxEventBytes ?? 1024 * 1024;
    const batch: WireEvent[] = [];
    let bytes = 0;
    for (let event of this.journal.pending(maxEvents)) {
      if (sizeOf(event) > maxEvent) {
        event = this.replaceRefused(
          event,
          `it was ${Math.round(sizeOf(event) / 1024)} KiB, over the ${Math.round(maxEvent / 1024)} KiB an event may be`,
        );
      }
      if (batch.length > 0 && (bytes + sizeOf(event) > maxBytes || event.seq <= this.singlyUntil))
        break;
      batch.push(event);
      bytes += sizeOf(event);
      if (event.seq <= this.singlyUntil) break;
    }
    return batch;
  }

  /** Puts a small `error` event in place of one the server cannot take, and says so. */
  private replaceRefused(event: WireEvent, reason: string): WireEvent {
    const message = `The turn's ${event.type} event could not be stored (${reason}); the turn stops here.`;
    const replaced =
      this.journal.replace(event.seq, agentEvent("error", { code: "event_refused", message })) ??
      event;
    this.options.onRefusedEvent?.(event.seq, message);
    return replaced;
  }

  /**
   * Waits before the next attempt; false when patience ran out (the turn was given up) or the
   * sender was stopped meanwhile.
   */
  private async retryLater(reason: string): Promise<boolean> {
    const now = Date.now();
    if (this.failingSince === null) {
      this.failingSince = now;
      this.options.onRetrying?.(new Date(now), reason);
    }
    const patience = this.options.patienceMs ?? 5 * 60_000;
    if (now - this.failingSince > patience) {
      this.giveUp({
        code: "unavailable",
        message: `The server could not store this turn's events for ${Math.round(patience / 1000)} s (${reason}); the turn stops here and its events stay journaled`,
      });
      return false;
    }
    const base = this.options.retryDelayMs ?? 250;
    const cap = this.options.maxRetryDelayMs ?? 2_000;
    const delay = Math.min(cap, base * 2 ** this.failures) * (0.5 + Math.random() / 2);
    this.failures++;
    await new Promise((resolve) => setTimeout(resolve, delay));
    return !this.rejected;
  }

  private giveUp(error: ApiErrorBody["error"]): void {
    this.rejected = true;
    this.resolveWaiters();
    this.options.onRejected?.(error);
  }
}
