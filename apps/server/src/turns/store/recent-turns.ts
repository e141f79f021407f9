// Copies of the running turns this process wrote last (without `messages` and `resumeState`),
// each with the version stamped in Redis when it was written: while the turn's counter still
// carries that version, nobody on any server wrote the turn since, and a mutation needs no
// database read (the accumulator's flushes, lease renewals).
import type { ChatTurnDocument } from "@gadget/db";

/** How many recently written running turns each process keeps a copy of. */
const recentLimit = 5_000;

export class RecentTurns {
  private readonly copies = new Map<string, { version: string; turn: ChatTurnDocument }>();

  /** The copy of `turnId` if it was taken at `version` (the counter's current one). */
  at(turnId: string, version: string | null): ChatTurnDocument | null {
    const copy = this.copies.get(turnId);
    return copy && version === copy.version ? copy.turn : null;
  }

  /** Whether a copy of `turnId` is kept. */
  has(turnId: string): boolean {
    return this.copies.has(turnId);
  }

  /** Keeps a copy of a running turn as just written (bounded; oldest first out). */
  keep(turnId: string, version: string, turn: ChatTurnDocument): void {
    const { messages: _messages, resumeState: _resumeState, ...slim } = turn;
    this.copies.delete(turnId);
    this.copies.set(turnId, { version, turn: slim as ChatTurnDocument });
    if (this.copies.size > recentLimit) {
      const oldest = this.copies.keys().next().value;
      if (oldest !== undefined) this.copies.delete(oldest);
    }
  }

  forget(turnId: string): void {
    this.copies.delete(turnId);
  }
}
