// Live drone presence in Redis (shared by every server): which socket holds a drone, its last
// heartbeat, capacity and workspaces. Kept out of MongoDB because it changes every few seconds
// and FerretDB v1 updates are not isolated.
import type { RedisClient } from "../redis/connections.ts";
import { luaScript } from "../redis/script.ts";

export interface Presence {
  online: boolean;
  /** The drone's name as of its connection (work orders' `dispatched` events carry it). */
  name: string | null;
  serverId: string | null;
  socketId: string | null;
  lastSeenAt: Date | null;
  capacity: number | null;
  /** As the drone said in its handshake (the document may be written a moment later). */
  hostname: string | null;
  platform: string | null;
  version: string | null;
  workspaces: string[];
  /** The turns the drone said it runs in its last heartbeat (the sweeper spares their leases). */
  runningTurns: string[];
  /** Its labels (the user's and its own), which dispatch matches turns' requirements against. */
  labels: string[];
  /** `start --ephemeral`: it takes one turn. */
  ephemeral: boolean;
  /** An ephemeral drone that took its turn. */
  spent: boolean;
  /** Stopping: it finishes its running turns and takes no new one. */
  draining: boolean;
}

export interface PresenceConnect {
  userId: string;
  name: string;
  serverId: string;
  socketId: string;
  capacity: number;
  hostname?: string | null;
  platform?: string | null;
  version?: string | null;
  workspaces: string[];
  labels: string[];
  ephemeral?: boolean;
  draining?: boolean;
}

// Updates only while the socket still holds the drone, so a late heartbeat or disconnect of an
// old socket never overwrites a newer connection.
const touchScript = `if redis.call("hget", KEYS[1], "socketId") == ARGV[1] then
  redis.call("hset", KEYS[1], "lastSeenAt", ARGV[2])
  if ARGV[3] ~= "" then redis.call("hset", KEYS[1], "workspaces", ARGV[3]) end
  if ARGV[4] ~= "" then redis.call("hset", KEYS[1], "runningTurns", ARGV[4]) end
  if ARGV[5] ~= "" and (redis.call("hget", KEYS[1], "draining") or "") ~= ARGV[5] then
    redis.call("hset", KEYS[1], "draining", ARGV[5])
    return 2
  end
  return 1 end return 0`;
const leaveScript = `if redis.call("hget", KEYS[1], "socketId") == ARGV[1] then
  redis.call("hdel", KEYS[1], "socketId", "serverId")
  redis.call("hset", KEYS[1], "lastSeenAt", ARGV[2])
  return 1 end return 0`;
// A revoked drone leaves a tombstone: no late heartbeat or racing connection brings it back.
const connectScript = `if redis.call("exists", KEYS[3]) == 1 then return 0 end
redis.call("hset", KEYS[1], unpack(ARGV, 2))
redis.call("sadd", KEYS[2], ARGV[1])
return 1`;
// A user's possibly-online drones and their records in one round trip (dispatch's hot path);
// revoked ones are left out.
const ofUserScript = `local ids = redis.call("smembers", KEYS[1])
local out = {}
for _, id in ipairs(ids) do
  if redis.call("exists", ARGV[2] .. id) == 0 then
    out[#out + 1] = id
    out[#out + 1] = redis.call("hgetall", ARGV[1] .. id)
  end
end
return out`;

// Only a record that exists (an offline drone's labels are read from its document at connect).
const relabelScript = `if redis.call("exists", KEYS[1]) == 1 then
  redis.call("hset", KEYS[1], "labels", ARGV[1]) return 1 end return 0`;

/** How long a revoked drone's tombstone stays (longer than any connection or heartbeat in flight). */
const tombstoneSeconds = 7 * 24 * 60 * 60;

/** Reads and writes presence records `<prefix>:presence:<droneId>`. */
export class PresenceStore {
  private readonly scripts;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly staleMs: number,
  ) {
    this.scripts = {
      touch: luaScript(redis, "gadgetPresenceTouch", touchScript),
      leave: luaScript(redis, "gadgetPresenceLeave", leaveScript),
      connect: luaScript(redis, "gadgetPresenceConnect", connectScript),
      ofUser: luaScript(redis, "gadgetPresenceOfUser", ofUserScript),
      relabel: luaScript(redis, "gadgetPresenceRelabel", relabelScript),
    };
  }

  private key(droneId: string): string {
    return `${this.prefix}:presence:${droneId}`;
  }

  private tombstoneKey(droneId: string): string {
    return `${this.prefix}:revoked-drone:${droneId}`;
  }

  private onlineKey(userId: string): string {
    return `${this.prefix}:online-drones:${userId}`;
  }

  /** Marks the drone online on `connect.socketId`; false (and nothing written) once revoked. */
  async connect(droneId: string, connect: PresenceConnect): Promise<boolean> {
    const fields = {
      serverId: connect.serverId,
      socketId: connect.socketId,
      name: connect.name,
      lastSeenAt: String(Date.now()),
      capacity: String(connect.capacity),
      hostname: connect.hostname ?? "",
      platform: connect.platform ?? "",
      version: connect.version ?? "",
      workspaces: JSON.stringify(connect.workspaces),
      labels: JSON.stringify(connect.labels),
      ephemeral: connect.ephemeral ? "1" : "",
      draining: connect.draining ? "1" : "0",
    };
    const written = await this.scripts.connect(
      [this.key(droneId), this.onlineKey(connect.userId), this.tombstoneKey(droneId)],
      droneId,
      ...Object.entries(fields).flat(),
    );
    return written === 1;
  }

  /** New labels for a drone that may be online (its user edited them); nothing when it is not. */
  async relabel(droneId: string, labels: string[]): Promise<void> {
    await this.scripts.relabel([this.key(droneId)], JSON.stringify(labels));
  }

  /** An ephemeral drone took its one turn: dispatch passes it over from now on. */
  async markSpent(droneId: string): Promise<void> {
    await this.redis.hset(this.key(droneId), "spent", "1");
  }

  /** Drones of a user that may be online (check each with read()). */
  onlineOf(userId: string): Promise<string[]> {
    return this.redis.smembers(this.onlineKey(userId));
  }

  /**
   * Renews the heartbeat: `false` when `socketId` no longer holds the drone, `"changed"` when
   * its draining state changed (browsers should hear of it), else `true`.
   */
  async touch(
    droneId: string,
    socketId: string,
    workspaces?: string[],
    runningTurns?: string[],
    draining?: boolean,
  ): Promise<boolean | "changed"> {
    const result = await this.scripts.touch(
      [this.key(droneId)],
      socketId,
      String(Date.now()),
      workspaces ? JSON.stringify(workspaces) : "",
      runningTurns ? JSON.stringify(runningTurns) : "",
      draining === undefined ? "" : draining ? "1" : "0",
    );
    return result === 2 ? "changed" : result === 1;
  }

  async disconnect(droneId: string, userId: string, socketId: string): Promise<void> {
    const left = await this.scripts.leave([this.key(droneId)], socketId, String(Date.now()));
    if (left === 1) await this.redis.srem(this.onlineKey(userId), droneId);
  }

  /** A revoked drone: gone from presence, and kept out of it from now on. */
  async revoke(droneId: string, userId: string): Promise<void> {
    await this.redis
      .multi()
      .set(this.tombstoneKey(droneId), "1", "EX", tombstoneSeconds)
      .del(this.key(droneId))
      .srem(this.onlineKey(userId), droneId)
      .exec();
  }

  /** Presence of several drones at once, in the order given. */
  async read(droneIds: readonly string[]): Promise<Presence[]> {
    if (droneIds.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const id of droneIds) pipeline.hgetall(this.key(id));
    const results = (await pipeline.exec()) ?? [];
    const now = Date.now();
    return results.map(([, value]) => this.parse((value ?? {}) as Record<string, string>, now));
  }

  /** The user's drones that may be online, with their presence, in one round trip. */
  async ofUser(userId: string): Promise<Array<{ droneId: string; presence: Presence }>> {
    const flat = (await this.scripts.ofUser(
      [this.onlineKey(userId)],
      `${this.prefix}:presence:`,
      `${this.prefix}:revoked-drone:`,
    )) as Array<string | string[]>;
    const now = Date.now();
    const drones: Array<{ droneId: string; presence: Presence }> = [];
    for (let index = 0; index + 1 < flat.length; index += 2) {
      const fields = flat[index + 1] as string[];
      const record: Record<string, string> = {};
      for (let field = 0; field + 1 < fields.length; field += 2) {
        record[fields[field]!] = fields[field + 1]!;
      }
      drones.push({ droneId: flat[index] as string, presence: this.parse(record, now) });
    }
    return drones;
  }

  private parse(record: Record<string, string>, now: number): Presence {
    const lastSeen = record.lastSeenAt ? Number(record.lastSeenAt) : null;
    return {
      online: Boolean(record.socketId) && lastSeen !== null && now - lastSeen < this.staleMs,
      name: record.name ?? null,
      serverId: record.serverId ?? null,
      socketId: record.socketId ?? null,
      lastSeenAt: lastSeen === null ? null : new Date(lastSeen),
      capacity: record.capacity ? Number(record.capacity) : null,
      hostname: record.hostname || null,
      platform: record.platform || null,
      version: record.version || null,
      workspaces: record.workspaces ? (JSON.parse(record.workspaces) as string[]) : [],
      runningTurns: record.runningTurns ? (JSON.parse(record.runningTurns) as string[]) : [],
      labels: record.labels ? (JSON.parse(record.labels) as string[]) : [],
      ephemeral: record.ephemeral === "1",
      spent: record.spent === "1",
      draining: record.draining === "1",
    };
  }
}
