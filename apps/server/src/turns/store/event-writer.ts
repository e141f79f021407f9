// Group commit of turn events: batches from every drone on this process (and the server's own
// events) are written together in one insertMany while the previous write is in flight, so the
// database sees few large writes instead of one per batch. Under load (more than one write per
// `gatherMs` lately), writes also start at least `gatherMs` apart: a write costs the database
// about as much as fifteen events (measured on FerretDB: 0.9 ms for 1–5 events, 3.5 ms for 50), so
// a few milliseconds of gathering buys back much of a core at thousands of events a second. Light
// traffic (a dispatch, a lone batch) is written at once. Each caller is answered once its events
// are durable.
//
// Faults stay with their cause: a write that fails because the database is unavailable is retried
// (the unique {turn, seq} index makes a repeated insert harmless) for `retryForMs`, its turns
// waiting on the outage from its first failure (their users see it at once, not once the retries
// give up), then every caller of the group gets `unavailable` together; a group that fails for any
// other reason is written again batch by batch, so one bad batch fails only its own caller.
import { isDuplicateKeyError, type Models } from "@gadget/db";
import { GadgetError, type TurnEvent } from "@gadget/protocol";
import { Types } from "mongoose";
import { retryWhileUnavailable, type StorageHealth } from "../../storage/health.ts";

/** How many recent writes tell whether the writer is under load. */
const loadWindow = 8;

interface Pending {
  turnId: string;
  /** The turn's user, when the caller knows it: told while the turn waits on an outage. */
  userId: string | undefined;
  documents: Array<TurnEvent & { turn: Types.ObjectId }>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

export class EventWriter {
  private queue: Pending[] = [];
  private inFlight = 0;
  /** When the last `loadWindow` writes started (performance.now()), oldest first. */
  private readonly starts: number[] = [];
  private gatherTimer: NodeJS.Timeout | null = null;
  /** Writes started and events in them, since this writer was made. */
  readonly stats = { writes: 0, events: 0 };

  constructor(
    private readonly models: Models,
    private readonly health: StorageHealth,
    private readonly options: {
      /** Concurrent writes; default 1 (FerretDB's SQLite serialises writes; larger groups win). */
      concurrency?: number;
      /** Largest single write, in events; default 2 000. */
      maxEvents?: number;
      /** Least time between the starts of two writes, unless a full write waits; default 5 ms. */
      gatherMs?: number;
      /** How long a write is retried while the database is unavailable; default 5 000 ms. */
      retryForMs?: number;
    } = {},
  ) {}

  private get concurrency(): number {
    return this.options.concurrency ?? 1;
  }

  private get maxEvents(): number {
    return this.options.maxEvents ?? 2_000;
  }

  private get gatherMs(): number {
    return this.options.gatherMs ?? 5;
  }

  /**
   * Stores events of one turn (of `userId`, when known); resolves when stored (duplicates of
   * stored seqs are ignored).
   */
  write(turnId: string, events: TurnEvent[], userId?: string): Promise<void> {
    if (events.length === 0) return Promise.resolve();
    const turn = new Types.ObjectId(turnId);
    return new Promise((resolve, reject) => {
      const documents = events.map((event) => ({ ...event, turn }));
      this.queue.push({ turnId, userId, documents, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    if (this.gatherTimer) {
      if (this.queued() < this.maxEvents) return;
      clearTimeout(this.gatherTimer);
      this.gatherTimer = null;
    }
    while (this.inFlight < this.concurrency && this.queue.length > 0) {
      const wait = this.gatherWait();
      if (wait > 0 && this.queued() < this.maxEvents) {
        this.gatherTimer = setTimeout(() => {
          this.gatherTimer = null;
          this.pump();
        }, wait);
        return;
      }
      this.starts.push(performance.now());
      if (this.starts.length > loadWindow) this.starts.shift();
      const group: Pending[] = [];
      let size = 0;
      while (
        this.queue.length > 0 &&
        (group.length === 0 || size + this.queue[0]!.documents.length <= this.maxEvents)
      ) {
        const next = this.queue.shift()!;
        group.push(next);
        size += next.documents.length;
      }
      this.inFlight++;
      this.stats.writes++;
      this.stats.events += size;
      this.writeGroup(group).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  /** Writes a group; answers every caller (never rejects). */
  private async writeGroup(group: Pending[]): Promise<void> {
    try {
      await this.insert(group);
      for (const pending of group) pending.resolve();
      return;
    } catch (error) {
      // An outage outlasted the retries: every batch of the group would meet it again.
      if (group.length === 1 || isUnavailable(error)) {
        for (const pending of group) pending.reject(error);
        return;
      }
    }
    // The group failed for a reason of its own: each batch on its own, so only the bad one fails.
    for (const pending of group) {
      try {
        await this.insert([pending]);
        pending.resolve();
      } catch (error) {
        pending.reject(error);
      }
    }
  }

  /**
   * One insert of `group`'s events, retried while the database is unavailable (its turns wait on
   * the outage meanwhile); a duplicate is already stored.
   */
  private insert(group: Pending[]): Promise<void> {
    const documents = group.flatMap((pending) => pending.documents);
    return retryWhileUnavailable(
      this.health,
      "database",
      async () => {
        try {
          // The driver's insertMany, not mongoose's: documents are built here already well-formed,
          // and casting thousands of them a second costs CPU the relay needs.
          await this.models.TurnEvent.collection.insertMany(documents, { ordered: false });
        } catch (error) {
          if (!isDuplicateKeyError(error)) throw error;
        }
      },
      {
        forMs: this.options.retryForMs ?? 5_000,
        onOutage: (service) => {
          for (const pending of group) this.health.waits(pending.turnId, pending.userId, service);
        },
      },
    );
  }

  /** How long the next write waits: nothing unless the last writes came faster than gatherMs. */
  private gatherWait(): number {
    const oldest = this.starts[0];
    const last = this.starts[this.starts.length - 1];
    if (oldest === undefined || last === undefined || this.starts.length < loadWindow) return 0;
    const now = performance.now();
    if (now - oldest >= loadWindow * this.gatherMs) return 0;
    return last + this.gatherMs - now;
  }

  private queued(): number {
    let count = 0;
    for (const pending of this.queue) count += pending.documents.length;
    return count;
  }

  /** Resolves when nothing is queued or being written. */
  async drain(): Promise<void> {
    while (this.inFlight > 0 || this.queue.length > 0) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }
}

/** This server's own `unavailable`: the retries gave up on an outage. */
function isUnavailable(error: unknown): boolean {
  return error instanceof GadgetError && error.code === "unavailable";
}
