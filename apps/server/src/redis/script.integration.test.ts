// Scripts go by SHA1 after the first call on a connection, and still run when Redis has
// forgotten them (a restart or SCRIPT FLUSH between calls).
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, describe, expect, inject, it } from "vitest";
import { luaScript } from "./script.ts";

const clients: Redis[] = [];
afterAll(async () => {
  await Promise.all(clients.map((client) => client.quit()));
});

function client(): Redis {
  const redis = new Redis(inject("redisUrl"));
  clients.push(redis);
  return redis;
}

const incrementLua = `return redis.call("incrby", KEYS[1], ARGV[1])`;

/** The EVAL and EVALSHA commands Redis received for `key`, as MONITOR shows them. */
async function watch(key: string): Promise<{ commands: string[]; stop: () => Promise<void> }> {
  const monitor = await client().monitor();
  const commands: string[] = [];
  monitor.on("monitor", (_time: string, args: string[]) => {
    const name = String(args[0]).toLowerCase();
    if (name.startsWith("eval") && args.includes(key)) commands.push(name);
  });
  return { commands, stop: async () => void monitor.disconnect() };
}

describe("luaScript", () => {
  it("sends the script once per connection, then only its hash", async () => {
    const redis = client();
    const key = `t_script_${randomUUID().slice(0, 8)}`;
    const increment = luaScript(redis, "testIncrement", incrementLua);
    const seen = await watch(key);
    for (let index = 0; index < 5; index++) await increment([key], "2");
    await new Promise((resolve) => setTimeout(resolve, 100));
    await seen.stop();
    expect(await redis.get(key)).toBe("10");
    expect(seen.commands).toEqual(["eval", "evalsha", "evalsha", "evalsha", "evalsha"]);
  });

  it("still runs after Redis forgot its scripts", async () => {
    const redis = client();
    const key = `t_script_${randomUUID().slice(0, 8)}`;
    const increment = luaScript(redis, "testIncrement", incrementLua);
    expect(await increment([key], "1")).toBe(1);
    await client().script("FLUSH");
    expect(await increment([key], "1")).toBe(2);
    // The same name on the same client is defined once and keeps working.
    expect(await luaScript(redis, "testIncrement", incrementLua)([key], "1")).toBe(3);
  });
});
