// Where the server's keys and channels live in Redis. Every key starts with the hash tag
// `{<prefix>}`, so on a Redis Cluster they share one slot: the scripts that touch a turn's counter
// and its drones' slot sets, a user's drones and their presence, and the pipelines over many of
// them stay atomic and single-node. Each BullMQ queue has its own tag (its keys share a slot, the
// queues spread over the cluster); channels are not keys and are not tagged (decision 0054).

/**
 * The prefix of every key the server writes itself: `{gadget}` for GADGET_REDIS_PREFIX=gadget.
 * @example `${keyTag("gadget")}:turn-seq:${turnId}` === "{gadget}:turn-seq:…"
 */
export function keyTag(redisPrefix: string): string {
  return `{${redisPrefix}}`;
}

/**
 * BullMQ's key prefix for queue `name`: `{gadget:bull:dispatch}`, so the queue's keys (and its
 * Lua scripts, which touch several) stay in one slot.
 */
export function queuePrefix(redisPrefix: string, name: string): string {
  return `{${redisPrefix}:bull:${name}}`;
}
