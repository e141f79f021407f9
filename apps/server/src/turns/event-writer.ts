// Group commit of turn events: batches from every drone on this process (and the server's own
// events) are written together in one insertMany while the previous write is in flight, so the
// database sees few large writes instead of one per batch. Each caller is answered once its
// events are durable.
import { isDuplicateKeyError, type Models } from "@gadget/db";
import type { TurnEvent } from "@gadget/protocol";
import { Types } from "mongoose";

interface Pending {
  documents: Array<TurnEvent & { turn: Types.ObjectId }>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

export class EventWriter {
  private queue: Pending[] = [];
  private inFlight = 0;

  constructor(
    private readonly models: Models,
    /** Concurrent writes; default 1 (FerretDB's SQLite serialises writes anyway; larger groups win). */
    private readonly concurrency = 1,
    /** Largest single write, in events; default 2 000. */
    private readonly maxEvents = 2_000,
  ) {}

  /** Stores events of one turn; resolves when stored (duplicates of stored seqs are ignored). */
  write(turnId: string, events: TurnEvent[]): Promise<void> {
    if (events.length === 0) return Promise.resolve();
    const turn = new Types.ObjectId(turnId);
    return new Promise((resolve, reject) => {
      this.queue.push({ documents: events.map((event) => ({ ...event, turn })), resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < this.concurrency && this.queue.length > 0) {
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
      // The driver's insertMany, not mongoose's: documents are built here already well-formed,
      // and casting thousands of them a second costs CPU the relay needs.
      this.models.TurnEvent.collection
        .insertMany(
          group.flatMap((pending) => pending.documents),
          { ordered: false },
        )
        .then(
          () => undefined,
          (error: unknown) => {
            if (!isDuplicateKeyError(error)) throw error;
          },
        )
        .then(
          () => {
            for (const pending of group) pending.resolve();
          },
          (error: unknown) => {
            for (const pending of group) pending.reject(error);
          },
        )
        .finally(() => {
          this.inFlight--;
          this.pump();
        });
    }
  }

  /** Resolves when nothing is queued or being written. */
  async drain(): Promise<void> {
    while (this.inFlight > 0 || this.queue.length > 0) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }
}
