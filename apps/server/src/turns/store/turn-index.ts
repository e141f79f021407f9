// Redis indexes of turns the server looks for often: queued turns (per user and overall) and
// leases of running turns. FerretDB v1 serves only `{_id}` lookups from an index, so scanning the
// turns collection every sweep would grow with history; MongoDB stays the truth and the sweeper
// re-derives these from it now and then.
import type { ChatTurnDocument } from "@gadget/db";
import { activeTurnStatuses } from "@gadget/db";
import type { RedisClient } from "../../redis/connections.ts";
import { luaScript } from "../../redis/script.ts";

// A user's queued turn enters the index only while the user has fewer than the limit: counted
// and added in one step, so a burst of parallel prompts cannot pass the quota together.
const reserveScript = `if redis.call("zscore", KEYS[1], ARGV[2]) then return 1 end
if redis.call("zcard", KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call("zadd", KEYS[1], ARGV[1], ARGV[2])
return 1`;

export class TurnIndex {
  private readonly reserveQueued;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {
    this.reserveQueued = luaScript(redis, "gadgetQueuedReserve", reserveScript);
  }

  private get queuedKey() {
    return `${this.prefix}:queued`;
  }
  private queuedByUserKey(userId: string) {
    return `${this.prefix}:queued-by-user:${userId}`;
  }
  private get leasesKey() {
    return `${this.prefix}:leases`;
  }

  /** Records where a turn now stands (call after every write that changes status or lease). */
  async record(
    turn: Pick<ChatTurnDocument, "_id" | "user" | "status" | "leaseExpiresAt" | "queuedAt">,
  ) {
    const id = String(turn._id);
    const pipeline = this.redis.pipeline();
    if (turn.status === "queued") {
      const score = new Date(turn.queuedAt ?? Date.now()).getTime();
      pipeline.zadd(this.queuedKey, score, id);
      pipeline.zadd(this.queuedByUserKey(String(turn.user)), score, id);
    } else {
      pipeline.zrem(this.queuedKey, id);
      pipeline.zrem(this.queuedByUserKey(String(turn.user)), id);
    }
    if (activeTurnStatuses.includes(turn.status) && turn.leaseExpiresAt) {
      pipeline.zadd(this.leasesKey, new Date(turn.leaseExpiresAt).getTime(), id);
    } else {
      pipeline.zrem(this.leasesKey, id);
    }
    await pipeline.exec();
  }

  async forget(turnId: string) {
    await this.redis.zrem(this.leasesKey, turnId);
  }

  /** Queued turns of a user, oldest first. */
  queuedOf(userId: string, limit = 200): Promise<string[]> {
    return this.redis.zrange(this.queuedByUserKey(userId), 0, limit - 1);
  }

  /**
   * Takes one of the user's `limit` places for queued turns for `turnId`; false when all are taken.
   * `record` of the turn then keeps (or, once it leaves `queued`, frees) the place.
   */
  async reserveQueuedPlace(
    userId: string,
    turnId: string,
    queuedAt: Date,
    limit: number,
  ): Promise<boolean> {
    const taken = await this.reserveQueued(
      [this.queuedByUserKey(userId)],
      String(queuedAt.getTime()),
      turnId,
      String(limit),
    );
    return taken === 1;
  }

  /** Queued turns of everyone, oldest first. */
  queued(limit = 500): Promise<string[]> {
    return this.redis.zrange(this.queuedKey, 0, limit - 1);
  }

  /** When each turn's lease ends (ms), or null for turns without one. */
  async leases(turnIds: readonly string[]): Promise<Array<number | null>> {
    if (turnIds.length === 0) return [];
    const scores = await this.redis.zmscore(this.leasesKey, ...turnIds);
    return scores.map((score) => (score === null ? null : Number(score)));
  }

  /** Running turns whose lease ended before `now`. */
  lapsed(now: number, limit = 100): Promise<string[]> {
    return this.redis.zrangebyscore(this.leasesKey, "-inf", now, "LIMIT", 0, limit);
  }
}
