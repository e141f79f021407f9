// ChatTurn updates of this process, group-committed like the events: one bulkWrite in flight,
// and whatever arrives meanwhile goes out together as the next one (unordered). A burst of turn
// writes — a hundred turns starting, flushing their streamed text or renewing their leases at
// once — costs the database a few commands instead of a queue of round trips, and on FerretDB
// the event inserts wait behind one statement at a time, not behind the whole burst.
import type { Models } from "@gadget/db";
import type { Types } from "mongoose";

interface Pending {
  id: Types.ObjectId;
  set: Record<string, unknown>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

export class TurnWrites {
  private queue: Pending[] = [];
  private inFlight = false;

  constructor(
    private readonly models: Models,
    /** Largest single write, in updates. */
    private readonly maxUpdates = 500,
  ) {}

  /** `$set`s fields of one turn; resolves once stored. */
  set(id: Types.ObjectId, set: Record<string, unknown>): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ id, set, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    if (this.inFlight || this.queue.length === 0) return;
    const group = this.queue.splice(0, this.maxUpdates);
    this.inFlight = true;
    void this.write(group).finally(() => {
      this.inFlight = false;
      this.pump();
    });
  }

  private async write(group: Pending[]): Promise<void> {
    // The driver's collection, not mongoose's model: the fields come typed from the turn store
    // (ObjectIds, Dates), and casting every update of a burst cost a third of a flush's CPU.
    const turns = this.models.ChatTurn.collection;
    try {
      await turns.bulkWrite(
        group.map(({ id, set }) => ({ updateOne: { filter: { _id: id }, update: { $set: set } } })),
        { ordered: false },
      );
      for (const pending of group) pending.resolve();
      return;
    } catch {
      // Which updates landed is not known for sure (FerretDB v1 stops at the first failing
      // statement, whatever `ordered` says): each is sent again on its own, and answered by
      // that. A `$set` applied twice is the same `$set`.
    }
    for (const pending of group) {
      try {
        await turns.updateOne({ _id: pending.id }, { $set: pending.set });
        pending.resolve();
      } catch (error) {
        pending.reject(error);
      }
    }
  }
}
