// Live drone presence in Redis (shared by every server): which socket holds a drone, its last
// heartbeat, capacity and workspaces. Kept out of MongoDB because it changes every few seconds
// and FerretDB v1 updates are not isolated.
import type { Redis } from "ioredis";

export interface Presence {
  online: boolean;
  serverId: string | null;
  socketId: string | null;
  lastSeenAt: Date | null;
  capacity: number | null;
  workspaces: string[];
}

export interface PresenceConnect {
  userId: string;
  serverId: string;
  socketId: string;
  capacity: number;
  workspaces: string[];
}

// Updates only while the socket still holds the drone, so a late heartbeat or disconnect of an
// old socket never overwrites a newer connection.
const touchScript = `if redis.call("hget", KEYS[1], "socketId") == ARGV[1] then
  redis.call("hset", KEYS[1], "lastSeenAt", ARGV[2])
  if ARGV[3] ~= "" then redis.call("hset", KEYS[1], "workspaces", ARGV[3]) end
  return 1 end return 0`;
const leaveScript = `if redis.call("hget", KEYS[1], "socketId") == ARGV[1] then
  redis.call("hdel", KEYS[1], "socketId", "serverId")
  redis.call("hset", KEYS[1], "lastSeenAt", ARGV[2])
  return 1 end return 0`;

/** Reads and writes presence records `<prefix>:presence:<droneId>`. */
export class PresenceStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly staleMs: number,
  ) {}

  private key(droneId: string): string {
    return `${this.prefix}:presence:${droneId}`;
  }

  private onlineKey(userId: string): string {
    return `${this.prefix}:online-drones:${userId}`;
  }

  async connect(droneId: string, connect: PresenceConnect): Promise<void> {
    await this.redis
      .multi()
      .hset(this.key(droneId), {
        serverId: connect.serverId,
        socketId: connect.socketId,
        lastSeenAt: String(Date.now()),
        capacity: String(connect.capacity),
        workspaces: JSON.stringify(connect.workspaces),
      })
      .sadd(this.onlineKey(connect.userId), droneId)
      .exec();
  }

  /** Drones of a user that may be online (check each with read()). */
  onlineOf(userId: string): Promise<string[]> {
    return this.redis.smembers(this.onlineKey(userId));
  }

  /** Renews the heartbeat; false when `socketId` no longer holds the drone. */
  async touch(droneId: string, socketId: string, workspaces?: string[]): Promise<boolean> {
    const result = await this.redis.eval(
      touchScript,
      1,
      this.key(droneId),
      socketId,
      String(Date.now()),
      workspaces ? JSON.stringify(workspaces) : "",
    );
    return result === 1;
  }

  async disconnect(droneId: string, userId: string, socketId: string): Promise<void> {
    const left = await this.redis.eval(
      leaveScript,
      1,
      this.key(droneId),
      socketId,
      String(Date.now()),
    );
    if (left === 1) await this.redis.srem(this.onlineKey(userId), droneId);
  }

  async remove(droneId: string, userId: string): Promise<void> {
    await this.redis.multi().del(this.key(droneId)).srem(this.onlineKey(userId), droneId).exec();
  }

  /** Presence of several drones at once, in the order given. */
  async read(droneIds: readonly string[]): Promise<Presence[]> {
    if (droneIds.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const id of droneIds) pipeline.hgetall(this.key(id));
    const results = (await pipeline.exec()) ?? [];
    const now = Date.now();
    return results.map(([, value]) => {
      const record = (value ?? {}) as Record<string, string>;
      const lastSeen = record.lastSeenAt ? Number(record.lastSeenAt) : null;
      return {
        online: Boolean(record.socketId) && lastSeen !== null && now - lastSeen < this.staleMs,
        serverId: record.serverId ?? null,
        socketId: record.socketId ?? null,
        lastSeenAt: lastSeen === null ? null : new Date(lastSeen),
        capacity: record.capacity ? Number(record.capacity) : null,
        workspaces: record.workspaces ? (JSON.parse(record.workspaces) as string[]) : [],
      };
    });
  }
}
