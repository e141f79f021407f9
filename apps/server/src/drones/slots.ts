// Used drone slots in Redis: the set of turns each drone holds. One script picks the first
// candidate drone with a free slot, takes the slot and numbers the turn's `dispatched` event in
// the same atomic step, so capacity holds across servers without a lock or a database read.
// MongoDB stays the truth (ChatTurn.drone + status, mirrored in Drone.activeTurns): a missing set
// is loaded from the drone's document, and the sweeper's repair re-derives every set.
import type { RedisClient } from "../redis/connections.ts";
import { luaScript } from "../redis/script.ts";

/** Marks a set as loaded, so an empty drone is told apart from one Redis forgot. */
const loadedMark = "-";

// KEYS[1] the turn's seq hash, KEYS[2..] the candidates' slot sets in order of preference.
// ARGV[1] the turn id, ARGV[2] the counter the caller's copy of the turn was read at ("" to not
// check), ARGV[3] the turn's new version (SeqStore.stamp's, for the claim's write), then per
// candidate its drone id and capacity.
const claimScript = `
local last = redis.call("hget", KEYS[1], "last")
if not last then return {"no_counter"} end
if ARGV[2] ~= "" and (last ~= ARGV[2] or (redis.call("hget", KEYS[1], "holder") or "") ~= "") then
  return {"changed"}
end
for index = 2, #KEYS do
  local droneId = ARGV[index * 2]
  local capacity = tonumber(ARGV[index * 2 + 1])
  local size = redis.call("scard", KEYS[index])
  if size == 0 then return {"unloaded", droneId} end
  if redis.call("sismember", KEYS[index], ARGV[1]) == 1 or size - 1 < capacity then
    redis.call("sadd", KEYS[index], ARGV[1])
    local seq = tonumber(last) + 1
    redis.call("hset", KEYS[1], "last", seq, "holder", droneId, "version", ARGV[3])
    return {"claimed", droneId, seq}
  end
end
return {"full"}`;

const loadScript = `
if redis.call("exists", KEYS[1]) == 1 then return 0 end
redis.call("sadd", KEYS[1], unpack(ARGV))
return 1`;

const addScript = `
if redis.call("exists", KEYS[1]) == 0 then return 0 end
return redis.call("sadd", KEYS[1], ARGV[1])`;

export interface SlotCandidate {
  droneId: string;
  capacity: number;
}

export type ClaimOutcome =
  | { status: "claimed"; droneId: string; seq: number }
  | { status: "full" }
  | { status: "no_counter" }
  /** The turn's counter moved past `expectLast`: the caller's copy is stale. */
  | { status: "changed" }
  | { status: "unloaded"; droneId: string };

export class DroneSlots {
  private readonly scripts;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {
    this.scripts = {
      claim: luaScript(redis, "gadgetSlotClaim", claimScript),
      load: luaScript(redis, "gadgetSlotLoad", loadScript),
      add: luaScript(redis, "gadgetSlotAdd", addScript),
    };
  }

  private key(droneId: string): string {
    return `${this.prefix}:drone-slots:${droneId}`;
  }

  /**
   * Takes a slot on the first candidate with one free for `turnId` and numbers the `dispatched`
   * event from the turn's counter (`seqKey`), setting the drone as the counter's holder and
   * `version` as the turn's (the stamp of the claim's write, one command less).
   * With `expectLast`, claims only while the counter is still there and nobody holds the turn:
   * every change of a queued turn adds an event, so this proves a copy of the turn current.
   * @example const outcome = await slots.claim(turnId, seqs.keyOf(turnId), [{ droneId, capacity: 2 }], newVersion());
   */
  async claim(
    turnId: string,
    seqKey: string,
    candidates: readonly SlotCandidate[],
    version: string,
    expectLast?: number,
  ): Promise<ClaimOutcome> {
    if (candidates.length === 0) return { status: "full" };
    const answer = (await this.scripts.claim(
      [seqKey, ...candidates.map((candidate) => this.key(candidate.droneId))],
      turnId,
      expectLast === undefined ? "" : String(expectLast),
      version,
      ...candidates.flatMap((candidate) => [candidate.droneId, String(candidate.capacity)]),
    )) as [string, string?, number?];
    switch (answer[0]) {
      case "claimed":
        return { status: "claimed", droneId: answer[1]!, seq: Number(answer[2]) };
      case "unloaded":
        return { status: "unloaded", droneId: answer[1]! };
      case "no_counter":
        return { status: "no_counter" };
      case "changed":
        return { status: "changed" };
      default:
        return { status: "full" };
    }
  }

  /** Fills a drone's set from MongoDB unless Redis already has it. */
  async load(droneId: string, turnIds: readonly string[]): Promise<void> {
    await this.scripts.load([this.key(droneId)], loadedMark, ...turnIds);
  }

  /** Records that a drone holds a turn (a no-op while the set is not loaded). */
  async add(droneId: string, turnId: string): Promise<void> {
    await this.scripts.add([this.key(droneId)], turnId);
  }

  /** Frees a drone's slot. */
  async remove(droneId: string, turnId: string): Promise<void> {
    await this.redis.srem(this.key(droneId), turnId);
  }

  /** The turns a drone's set lists; null when it is not loaded. */
  async list(droneId: string): Promise<string[] | null> {
    const members = await this.redis.smembers(this.key(droneId));
    if (members.length === 0) return null;
    return members.filter((member) => member !== loadedMark);
  }

  /** Frees and takes slots of one drone in one step (repair). */
  async adjust(droneId: string, remove: readonly string[], add: readonly string[]): Promise<void> {
    const multi = this.redis.multi();
    if (remove.length > 0) multi.srem(this.key(droneId), ...remove);
    for (const turnId of add) multi.eval(addScript, 1, this.key(droneId), turnId);
    await multi.exec();
  }
}
