// Per-turn sequence numbers and the drone holding the turn, in Redis: one atomic script checks a
// drone batch (held by this drone? continues the sequence?) without touching MongoDB, and the
// server's own events take their seqs from the same counter, so seqs never collide across servers.
// MongoDB's TurnEvent unique index stays the last word on duplicates.
//
// Two cursors: `last` is the highest seq taken (checked drone batches, allocated server events),
// possibly before its events are stored; `applied` is the highest seq whose events are stored and
// applied to the ChatTurn. A batch re-sent after a failed write or apply finds its events above
// `applied` and is applied then, once (decision 0018).
import { randomBytes } from "node:crypto";
import type { ChatTurnDocument, Models } from "@gadget/db";
import { activeTurnStatuses } from "@gadget/db";
import { UserError } from "@gadget/protocol";
import type { RedisClient } from "../../redis/connections.ts";
import { luaScript } from "../../redis/script.ts";

const appendScript = `
local last = redis.call("hget", KEYS[1], "last")
if not last then return {-2, 0} end
last = tonumber(last)
local holder = redis.call("hget", KEYS[1], "holder") or ""
local first = tonumber(ARGV[2])
local finalSeq = first + tonumber(ARGV[3]) - 1
local session = redis.call("hget", KEYS[1], "session") or ""
local user = redis.call("hget", KEYS[1], "user") or ""
local applied = tonumber(redis.call("hget", KEYS[1], "applied") or last)
if holder ~= ARGV[1] then
  -- A re-sent batch of the drone that ended the turn is answered (and applied if it was not).
  if finalSeq <= last and redis.call("hget", KEYS[1], "ended") == ARGV[1] then
    return {last, last, session, user, applied}
  end
  return {-1, last}
end
if first > last + 1 then return {-3, last} end
local newLast = math.max(last, finalSeq)
redis.call("hset", KEYS[1], "last", newLast)
if ARGV[4] == "1" and newLast > last then
  redis.call("hset", KEYS[1], "holder", "", "ended", ARGV[1])
end
return {last, newLast, session, user, applied}`;

const appliedScript = `
if redis.call("exists", KEYS[1]) == 0 then return 0 end
local applied = tonumber(redis.call("hget", KEYS[1], "applied") or 0)
if tonumber(ARGV[1]) > applied then redis.call("hset", KEYS[1], "applied", ARGV[1]) end
return 1`;

const allocateScript = `
local last = redis.call("hget", KEYS[1], "last")
if not last then return -2 end
last = tonumber(last)
-- Taking a turn from its drone: seqs it took but never stored are given back, so the log has no hole.
if ARGV[3] ~= "-" and tonumber(ARGV[3]) < last then last = tonumber(ARGV[3]) end
local first = last + 1
redis.call("hset", KEYS[1], "last", last + tonumber(ARGV[1]))
if ARGV[2] ~= "-" then redis.call("hset", KEYS[1], "holder", ARGV[2]) end
return first`;

const initScript = `
if redis.call("exists", KEYS[1]) == 0 then
  redis.call("hset", KEYS[1], "last", ARGV[1], "holder", ARGV[2], "applied", ARGV[6])
  redis.call("hset", KEYS[1], "session", ARGV[4], "user", ARGV[5])
  if ARGV[3] == "1" then redis.call("hset", KEYS[1], "cancel", "1") end
end
return 1`;

const stampScript = `
if redis.call("exists", KEYS[1]) == 0 then return false end
redis.call("hset", KEYS[1], "version", ARGV[1])
return ARGV[1]`;

/** What a new or rebuilt counter starts from. */
export interface CounterStart {
  /** The turn's highest stored seq. */
  last: number;
  /** The highest seq applied to the ChatTurn (its `lastSeq`); default `last`. */
  applied?: number;
  /** The drone holding the turn, or "". */
  holder: string;
  /** The turn's session and user, kept here so ingestion needs no read to relay a batch. */
  sessionId: string;
  userId: string;
  cancel?: boolean;
}

export type AppendOutcome =
  | {
      status: "ok";
      previous: number;
      last: number;
      /** Events up to this seq are stored and applied to the turn already (or handed on to be). */
      applied: number;
      /** The turn's session and user when the counter knows them. */
      meta: { sessionId: string; userId: string } | null;
    }
  | { status: "not_held"; last: number }
  | { status: "gap"; last: number };

/** A new random version of a turn's document (`stamp`, or dispatch's claim script). */
export function newVersion(): string {
  return randomBytes(8).toString("hex");
}

export class SeqStore {
  private readonly scripts;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly models: Models,
  ) {
    this.scripts = {
      // Every drone batch is checked here first: the batches one poll read share a write.
      append: luaScript(redis, "gadgetSeqAppend", appendScript, { gather: true }),
      applied: luaScript(redis, "gadgetSeqApplied", appliedScript, { gather: true }),
      allocate: luaScript(redis, "gadgetSeqAllocate", allocateScript),
      init: luaScript(redis, "gadgetSeqInit", initScript),
      stamp: luaScript(redis, "gadgetSeqStamp", stampScript),
    };
  }

  /** The Redis hash of a turn's counter (`last`, `holder`); dispatch claims seqs in its script. */
  keyOf(turnId: string): string {
    return `${this.prefix}:turn-seq:${turnId}`;
  }

  /** Starts the counter of a new turn (a no-op if it exists). */
  async init(turnId: string, start: CounterStart): Promise<void> {
    await this.scripts.init(
      [this.keyOf(turnId)],
      String(start.last),
      start.holder,
      start.cancel ? "1" : "0",
      start.sessionId,
      start.userId,
      String(start.applied ?? start.last),
    );
  }

  /** Rebuilds a missing counter from MongoDB (after a Redis restart, or a turn older than the key). */
  async load(turnId: string): Promise<void> {
    const turn = await this.models.ChatTurn.findById(turnId)
      .select({ lastSeq: 1, status: 1, drone: 1, cancelRequestedAt: 1, session: 1, user: 1 })
      .lean<ChatTurnDocument>();
    if (!turn) return;
    const last = await this.storedUpTo(turn);
    const holder = activeTurnStatuses.includes(turn.status) && turn.drone ? String(turn.drone) : "";
    await this.init(turnId, {
      last,
      // What the document has applied; a re-sent batch above it is applied again.
      applied: turn.lastSeq ?? 0,
      holder,
      sessionId: String(turn.session),
      userId: String(turn.user),
      cancel: Boolean(turn.cancelRequestedAt),
    });
  }

  /** The turn's highest stored seq (its events are read from the turn's recorded lastSeq on). */
  async storedUpTo(turn: Pick<ChatTurnDocument, "_id" | "lastSeq">): Promise<number> {
    // lastSeq lags the stored events by at most a flush: on FerretDB a filter without it decodes
    // every event of the turn.
    const newest = await this.models.TurnEvent.find({
      turn: turn._id,
      seq: { $gte: turn.lastSeq ?? 0 },
    })
      .sort({ seq: -1 })
      .limit(1)
      .select({ seq: 1 })
      .lean();
    return Math.max(turn.lastSeq ?? 0, newest[0]?.seq ?? 0);
  }

  /**
   * Checks and records a drone's batch `[first, first+count)`; `ends` when it holds `done`.
   * Events with seq > `previous` are new.
   */
  async append(
    turnId: string,
    droneId: string,
    first: number,
    count: number,
    ends: boolean,
  ): Promise<AppendOutcome> {
    for (let attempt = 0; attempt < 2; attempt++) {
      const [previous, last, sessionId, userId, applied] = (await this.scripts.append(
        [this.keyOf(turnId)],
        droneId,
        String(first),
        String(count),
        ends ? "1" : "0",
      )) as [number, number, string?, string?, number?];
      if (previous === -2) {
        await this.load(turnId);
        continue;
      }
      if (previous === -1) return { status: "not_held", last };
      if (previous === -3) return { status: "gap", last };
      const meta = sessionId && userId ? { sessionId, userId } : null;
      return { status: "ok", previous, last, applied: applied ?? last, meta };
    }
    return { status: "not_held", last: 0 };
  }

  /**
   * Takes `count` seqs for the server's own events and sets the holder (`null` leaves it).
   * `storedUpTo`: the turn's highest stored seq, when the server takes the turn from its drone;
   * seqs the drone took beyond it are given back. Returns the first seq.
   */
  async allocate(
    turnId: string,
    count: number,
    holder: string | null,
    options: { storedUpTo?: number } = {},
  ): Promise<number> {
    for (let attempt = 0; attempt < 2; attempt++) {
      const first = (await this.scripts.allocate(
        [this.keyOf(turnId)],
        String(count),
        holder ?? "-",
        options.storedUpTo === undefined ? "-" : String(options.storedUpTo),
      )) as number;
      if (first !== -2) return first;
      await this.load(turnId);
    }
    throw new UserError("not_found", `Turn ${turnId} not found`);
  }

  /** Records that the turn's events up to `seq` are applied to its ChatTurn. */
  async markApplied(turnId: string, seq: number): Promise<void> {
    await this.scripts.applied([this.keyOf(turnId)], String(seq));
  }

  /** The turn's highest seq taken so far (checked drone events, allocated server events). */
  async last(turnId: string): Promise<number | null> {
    const last = await this.redis.hget(this.keyOf(turnId), "last");
    return last === null ? null : Number(last);
  }

  /**
   * Marks that the turn's document is about to change: a new random version, so a copy of the
   * document taken at the old version is known stale on every server. Null without a counter.
   */
  async stamp(turnId: string): Promise<string | null> {
    return (await this.scripts.stamp([this.keyOf(turnId)], newVersion())) as string | null;
  }

  /** The version `stamp` last set, or null. */
  version(turnId: string): Promise<string | null> {
    return this.redis.hget(this.keyOf(turnId), "version");
  }

  /** Mirrors ChatTurn.cancelRequestedAt: heartbeats learn of a cancel without a database read. */
  async markCancel(turnId: string, requested: boolean): Promise<void> {
    if (requested) await this.redis.hset(this.keyOf(turnId), "cancel", "1");
    else await this.redis.hdel(this.keyOf(turnId), "cancel");
  }

  /**
   * Per turn, the drone holding it and whether a cancel is pending; null where Redis has no
   * counter (then only MongoDB can tell).
   */
  async holders(
    turnIds: readonly string[],
  ): Promise<Array<{ holder: string; cancel: boolean } | null>> {
    const pipeline = this.redis.pipeline();
    for (const turnId of turnIds) pipeline.hmget(this.keyOf(turnId), "last", "holder", "cancel");
    const results = (await pipeline.exec()) ?? [];
    return results.map(([error, value]) => {
      const [last, holder, cancel] = (error ? [] : value) as Array<string | null>;
      return last ? { holder: holder ?? "", cancel: cancel === "1" } : null;
    });
  }

  /** Lets the counter of a finished turn expire after a day (a resume rebuilds it). */
  async retire(turnId: string): Promise<void> {
    await this.redis.pexpire(this.keyOf(turnId), 24 * 60 * 60 * 1000);
  }

  async keep(turnId: string): Promise<void> {
    await this.redis.persist(this.keyOf(turnId));
  }
}
