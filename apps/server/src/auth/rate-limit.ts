// Fixed-window rate limiting in Redis, shared by every server process.
import { UserError } from "@gadget/protocol";
import type { Redis } from "ioredis";

/**
 * Counts one attempt against `key`; throws `rate_limited` (429) past `max` in `windowMs`.
 * @example await limit(redis, `gadget:rl:login:${email}`, 10, 60_000);
 */
export async function limit(
  redis: Redis,
  key: string,
  max: number,
  windowMs: number,
): Promise<void> {
  const [[, count], [, ttl]] = (await redis.multi().incr(key).pttl(key).exec()) as [
    [unknown, number],
    [unknown, number],
  ];
  if (ttl < 0) await redis.pexpire(key, windowMs);
  if (count > max) {
    const retryAfterSeconds = Math.max(1, Math.ceil((ttl < 0 ? windowMs : ttl) / 1000));
    throw new UserError("rate_limited", `Too many attempts; try again in ${retryAfterSeconds} s`, {
      details: { retryAfterSeconds },
    });
  }
}
