// Lua scripts sent by their SHA1: `redis.eval` writes the whole script on every call (and Redis
// hashes it again), which for the seq check of every drone batch was a tenth of the server's
// time in socket writes. ioredis's defineCommand sends EVAL once per connection, then EVALSHA.
import type { RedisClient } from "./connections.ts";

type Runner = (numberOfKeys: number, ...keysAndArgs: Array<string | number>) => Promise<unknown>;

export interface LuaScriptOptions {
  /**
   * Calls made before the event loop next runs its immediates go out as one pipeline: one write
   * for the batches of every drone whose data one poll read, instead of one write each. A lone
   * call waits for nothing but the rest of the current poll.
   */
  gather?: boolean;
}

interface Call {
  args: Array<string | number>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * Defines `lua` on `redis` as the command `name` (once per client) and returns a runner.
 * @example const append = luaScript(redis, "gadgetSeqAppend", appendLua); await append([key], "a");
 */
export function luaScript(
  redis: RedisClient,
  name: string,
  lua: string,
  options: LuaScriptOptions = {},
): (keys: readonly string[], ...args: string[]) => Promise<unknown> {
  const commands = redis as unknown as Record<string, Runner | undefined>;
  // Without numberOfKeys, the command takes the key count first (scripts with a varying count).
  if (!commands[name]) redis.defineCommand(name, { lua });
  const run = commands[name]!;
  if (!options.gather) return (keys, ...args) => run.call(redis, keys.length, ...keys, ...args);

  let queued: Call[] = [];
  const send = () => {
    const calls = queued;
    queued = [];
    if (calls.length === 1) {
      const [call] = calls as [Call];
      run.call(redis, ...(call.args as [number, ...string[]])).then(call.resolve, call.reject);
      return;
    }
    const pipeline = redis.pipeline();
    const queue = (pipeline as unknown as Record<string, Runner>)[name]!;
    for (const call of calls) queue.call(pipeline, ...(call.args as [number, ...string[]]));
    pipeline.exec().then(
      (results) => {
        calls.forEach((call, index) => {
          const [error, value] = results?.[index] ?? [new Error("no reply"), null];
          if (error) call.reject(error);
          else call.resolve(value);
        });
      },
      (error: unknown) => {
        for (const call of calls) call.reject(error);
      },
    );
  };
  return (keys, ...args) =>
    new Promise((resolve, reject) => {
      queued.push({ args: [keys.length, ...keys, ...args], resolve, reject });
      if (queued.length === 1) setImmediate(send);
    });
}
