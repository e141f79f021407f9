// Lua scripts sent by their SHA1: `redis.eval` writes the whole script on every call (and Redis
// hashes it again), which for the seq check of every drone batch was a tenth of the server's
// time in socket writes. ioredis's defineCommand sends EVAL once per connection, then EVALSHA.
import type { Redis } from "ioredis";

type Runner = (numberOfKeys: number, ...keysAndArgs: string[]) => Promise<unknown>;

/**
 * Defines `lua` on `redis` as the command `name` (once per client) and returns a runner.
 * @example const append = luaScript(redis, "gadgetSeqAppend", appendLua); await append([key], "a");
 */
export function luaScript(
  redis: Redis,
  name: string,
  lua: string,
): (keys: readonly string[], ...args: string[]) => Promise<unknown> {
  const commands = redis as unknown as Record<string, Runner | undefined>;
  // Without numberOfKeys, the command takes the key count first (scripts with a varying count).
  if (!commands[name]) redis.defineCommand(name, { lua });
  const run = commands[name]!;
  return (keys, ...args) => run.call(redis, keys.length, ...keys, ...args);
}
