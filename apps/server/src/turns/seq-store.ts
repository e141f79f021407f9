// Per-turn sequence numbers and the drone holding the turn, in Redis: one atomic script checks a
// drone batch (held by this drone? continues the sequence?) without touching MongoDB, and the
// server's own events take their seqs from the same counter, so seqs never collide across servers.
// MongoDB's TurnEvent unique index stays the last word on duplicates.
import type { ChatTurnDocument, Models } from "@gadget/db";
import { activeTurnStatuses } from "@gadget/db";
import type { Redis } from "ioredis";

const appendScript = `
local last = redis.call("hget", KEYS[1], "last")
if not last then return {-2, 0} end
last = tonumber(last)
local holder = redis.call("hget", KEYS[1], "holder") or ""
local first = tonumber(ARGV[2])
local finalSeq = first + tonumber(ARGV[3]) - 1
if holder ~= ARGV[1] then
  -- A re-sent batch of the drone that ended the turn is acknowledged, never stored twice.
  if finalSeq <= last and redis.call("hget", KEYS[1], "ended") == ARGV[1] then return {last, last} end
  return {-1, last}
end
if first > last + 1 then return {-3, last} end
local newLast = math.max(last, finalSeq)
redis.call("hset", KEYS[1], "last", newLast)
if ARGV[4] == "1" and newLast > last then
  redis.call("hset", KEYS[1], "holder", "", "ended", ARGV[1])
end
return {last, newLast}`;

const allocateScript = `
local last = redis.call("hget", KEYS[1], "last")
if not last then return -2 end
local first = tonumber(last) + 1
redis.call("hset", KEYS[1], "last", tonumber(last) + tonumber(ARGV[1]))
if ARGV[2] ~= "-" then redis.call("hset", KEYS[1], "holder", ARGV[2]) end
return first`;

const initScript = `
if redis.call("exists", KEYS[1]) == 0 then
  redis.call("hset", KEYS[1], "last", ARGV[1], "holder", ARGV[2])
end
return 1`;

export type AppendOutcome =
  | { status: "ok"; previous: number; last: number }
  | { status: "not_held"; last: number }
  | { status: "gap"; last: number };

export class SeqStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly models: Models,
  ) {}

  private key(turnId: string): string {
    return `${this.prefix}:turn-seq:${turnId}`;
  }

  /** Starts the counter of a new turn. */
  async init(turnId: string, last: number, holder: string): Promise<void> {
    await this.redis.eval(initScript, 1, this.key(turnId), String(last), holder);
  }

  /** Rebuilds a missing counter from MongoDB (after a Redis restart, or a turn older than the key). */
  private async load(turnId: string): Promise<void> {
    const turn = await this.models.ChatTurn.findById(turnId)
      .select({ lastSeq: 1, status: 1, drone: 1 })
      .lean<ChatTurnDocument>();
    if (!turn) return;
    const newest = await this.models.TurnEvent.find({ turn: turn._id })
      .sort({ seq: -1 })
      .limit(1)
      .select({ seq: 1 })
      .lean();
    const last = Math.max(turn.lastSeq ?? 0, newest[0]?.seq ?? 0);
    const holder = activeTurnStatuses.includes(turn.status) && turn.drone ? String(turn.drone) : "";
    await this.init(turnId, last, holder);
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
      const [previous, last] = (await this.redis.eval(
        appendScript,
        1,
        this.key(turnId),
        droneId,
        String(first),
        String(count),
        ends ? "1" : "0",
      )) as [number, number];
      if (previous === -2) {
        await this.load(turnId);
        continue;
      }
      if (previous === -1) return { status: "not_held", last };
      if (previous === -3) return { status: "gap", last };
      return { status: "ok", previous, last };
    }
    return { status: "not_held", last: 0 };
  }

  /**
   * Takes `count` seqs for the server's own events and sets the holder (`null` leaves it).
   * Returns the first seq.
   */
  async allocate(turnId: string, count: number, holder: string | null): Promise<number> {
    for (let attempt = 0; attempt < 2; attempt++) {
      const first = (await this.redis.eval(
        allocateScript,
        1,
        this.key(turnId),
        String(count),
        holder ?? "-",
      )) as number;
      if (first !== -2) return first;
      await this.load(turnId);
    }
    throw new Error(`turn ${turnId} not found`);
  }

  /** Lets the counter of a finished turn expire after a day (a resume rebuilds it). */
  async retire(turnId: string): Promise<void> {
    await this.redis.pexpire(this.key(turnId), 24 * 60 * 60 * 1000);
  }

  async keep(turnId: string): Promise<void> {
    await this.redis.persist(this.key(turnId));
  }
}
