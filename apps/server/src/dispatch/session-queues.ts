// The order of a session's turns, held by the server (MongoDB, SessionQueue): a turn joins when
// posted and leaves when it finishes; only the first unfinished turn may be dispatched, so a
// session's turns run one at a time in the order they were posted, on any server process and
// across restarts. Each change is made under the `session-queue:<id>` lock (FerretDB updates are
// not isolated, decision 0007).
import { activeTurnStatuses, type Models } from "@gadget/db";
import type { TurnStatus } from "@gadget/protocol";
import { Types } from "mongoose";
import type { Locks } from "../redis/locks.ts";

const unfinished: readonly TurnStatus[] = ["queued", ...activeTurnStatuses];

export interface SessionQueuesDependencies {
  models: Models;
  locks: Locks;
}

export class SessionQueues {
  constructor(private readonly dependencies: SessionQueuesDependencies) {}

  private with<T>(sessionId: string, work: () => Promise<T>): Promise<T> {
    return this.dependencies.locks.with(`session-queue:${sessionId}`, work);
  }

  /**
   * Puts `turnId` last in its session's queue and answers how many unfinished turns are ahead
   * of it (0: it may start at once) as soon as that is known, with `written`, which resolves once
   * the queue is stored (the lock is held until then, so the next turn to join sees this one).
   * Turns found finished are dropped from the queue.
   * `allowed` (default: at once) lets a caller join while it still checks the turn may be made:
   * the lock is taken and the queue read alongside those checks (one round less before the turn
   * is stored), and the queue is written only once `allowed` resolves true; false or a rejection
   * writes nothing. The lock is held meanwhile, so `allowed` must not wait for this session's
   * queue itself.
   */
  async join(
    sessionId: string,
    turnId: string,
    allowed: Promise<boolean> = Promise.resolve(true),
  ): Promise<{ position: number; written: Promise<void> }> {
    const { SessionQueue } = this.dependencies.models;
    let known!: (position: number) => void;
    const position = new Promise<number>((resolve) => {
      known = resolve;
    });
    // Heard below; this keeps a refusal from counting as unhandled while the lock is awaited.
    allowed.catch(() => undefined);
    const written = this.with(sessionId, async () => {
      const queue = await SessionQueue.findById(sessionId).lean();
      const ahead = await this.stillUnfinished(queue?.turns ?? []);
      known(ahead.length);
      if (!(await allowed.catch(() => false))) return;
      const turns = [...ahead.map((id) => new Types.ObjectId(id)), new Types.ObjectId(turnId)];
      await SessionQueue.updateOne({ _id: sessionId }, { $set: { turns } }, { upsert: true });
    });
    // Awaited by the caller; this keeps a failure from counting as unhandled meanwhile.
    written.catch(() => undefined);
    return { position: await Promise.race([position, written.then(() => position)]), written };
  }

  /** Takes a finished turn out of its session's queue; answers the turn now first, if any. */
  async leave(sessionId: string, turnId: string): Promise<string | null> {
    const { SessionQueue } = this.dependencies.models;
    return this.with(sessionId, async () => {
      const queue = await SessionQueue.findById(sessionId).lean();
      if (!queue) return null;
      const rest = queue.turns.filter((id) => String(id) !== turnId);
      if (rest.length !== queue.turns.length) {
        await SessionQueue.updateOne({ _id: sessionId }, { $set: { turns: rest } });
      }
      return rest[0] ? String(rest[0]) : null;
    });
  }

  /**
   * The unfinished turns ahead of `turnId` in its session's queue (read without the lock: a turn
   * ahead leaves only once its final status is stored, which is checked here too). A turn not in
   * the queue (stored before there was one) waits for nobody.
   */
  async ahead(sessionId: string, turnId: string): Promise<string[]> {
    const queue = await this.dependencies.models.SessionQueue.findById(sessionId).lean();
    const turns = (queue?.turns ?? []).map(String);
    const index = turns.indexOf(turnId);
    if (index <= 0) return [];
    return this.stillUnfinished(turns.slice(0, index));
  }

  /** Each queued turn's place in its session's queue (1: next to start), by turn id. */
  async positions(sessionId: string): Promise<Map<string, number>> {
    const queue = await this.dependencies.models.SessionQueue.findById(sessionId).lean();
    return new Map((queue?.turns ?? []).map((id, index) => [String(id), index]));
  }

  /** Of `turns`, the ones not finished yet (by `_id`: the only lookup FerretDB indexes). */
  private async stillUnfinished(turns: readonly Types.ObjectId[] | readonly string[]) {
    if (turns.length === 0) return [];
    const found = await this.dependencies.models.ChatTurn.find({ _id: { $in: turns } })
      .select({ status: 1 })
      .lean();
    const open = new Set(
      found.filter((turn) => unfinished.includes(turn.status)).map((turn) => String(turn._id)),
    );
    return turns.map(String).filter((id) => open.has(id));
  }
}
