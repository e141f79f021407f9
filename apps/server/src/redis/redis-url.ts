// What REDIS_URL names, read by @gadget/services (which `pnpm start` shares); here its refusal
// becomes the server's `invalid_environment` error. RedisConnections makes clients from the result.
import { UserError } from "@gadget/protocol";
import { parseRedisUrl as parseTarget, type RedisTarget, RedisUrlError } from "@gadget/services";

export { type RedisNode, type RedisTarget, redactRedisUrl } from "@gadget/services";

/**
 * Reads REDIS_URL (one Redis, a Redis Cluster's seed nodes, or a Sentinel-watched master).
 * @example parseRedisUrl("redis+sentinel://127.0.0.1:26379/mymaster").kind === "sentinel"
 */
export function parseRedisUrl(url: string): RedisTarget {
  try {
    return parseTarget(url);
  } catch (error) {
    if (error instanceof RedisUrlError) throw new UserError("invalid_environment", error.message);
    throw error;
  }
}
