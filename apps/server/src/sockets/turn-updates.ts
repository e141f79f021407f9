// The throttled `turn_updates` push to a user's browsers: what changed on their turns, batched.
import type { ChatTurnDocument } from "@gadget/db";
import { toTurn } from "../serialize.ts";
import { type IdeNamespace, userRoom } from "./rooms.ts";

/** How soon a status change is pushed: soon, and with the other turns changing meanwhile. */
const statusPushMs = 50;

export class TurnUpdates {
  /** Per user: turns whose push is pending, its timer, and when the last push went out. */
  private readonly updates = new Map<
    string,
    {
      pending: Map<string, ChatTurnDocument>;
      timer: NodeJS.Timeout | null;
      due: number;
      lastPush: number;
    }
  >();
  /** Set by the shutdown's last flush: the sockets and Redis are closing, so nothing more goes out. */
  private stopped = false;

  /**
   * @param ide The browsers' namespace.
   * @param intervalMs At most one push per user per interval while turns keep changing.
   */
  constructor(
    private readonly ide: IdeNamespace,
    private readonly intervalMs: number,
  ) {}

  /**
   * Queues a `turn_updates` push to the turn's user: within `statusPushMs` for a status change,
   * else within `intervalMs`. One message per user carries every turn that changed meanwhile, and
   * while turns keep changing a user gets at most one message per interval: each message goes to
   * every socket of the user, so a hundred turns starting together reach each socket as a few
   * messages, not one per turn (or per 50 ms).
   */
  push(turn: ChatTurnDocument, statusChanged: boolean): void {
    // A write that lands after the shutdown's flush would publish on a closed Redis connection
    // from its timer, an error nothing catches (it ended the forge bench's process).
    if (this.stopped) return;
    const userId = String(turn.user);
    let updates = this.updates.get(userId);
    if (!updates) {
      updates = { pending: new Map(), timer: null, due: 0, lastPush: Number.NEGATIVE_INFINITY };
      this.updates.set(userId, updates);
    }
    updates.pending.set(String(turn._id), turn);
    const interval = this.intervalMs;
    const now = Date.now();
    const due = Math.max(
      now + (statusChanged ? statusPushMs : interval),
      updates.lastPush + interval,
    );
    if (updates.timer && updates.due <= due) return;
    if (updates.timer) clearTimeout(updates.timer);
    updates.due = due;
    updates.timer = setTimeout(() => this.flush(userId), due - now);
  }

  private flush(userId: string): void {
    const updates = this.updates.get(userId);
    if (!updates) return;
    if (updates.timer) clearTimeout(updates.timer);
    updates.timer = null;
    if (updates.pending.size === 0) {
      // Nothing came within an interval of the last push: forget the user.
      this.updates.delete(userId);
      return;
    }
    const turns = [...updates.pending.values()].map(toTurn);
    updates.pending.clear();
    updates.lastPush = Date.now();
    // Checks back after an interval, to forget the user if nothing came.
    updates.due = updates.lastPush + this.intervalMs;
    updates.timer = setTimeout(() => this.flush(userId), updates.due - updates.lastPush);
    this.ide.to(userRoom(userId)).emit("turn_updates", { turns });
  }

  /** Sends every pending `turn_updates` now, and none after (shutdown). */
  flushAll(): void {
    this.stopped = true;
    for (const [userId, updates] of [...this.updates]) {
      if (updates.pending.size > 0) this.flush(userId);
      if (updates.timer) clearTimeout(updates.timer);
      this.updates.delete(userId);
    }
  }
}
