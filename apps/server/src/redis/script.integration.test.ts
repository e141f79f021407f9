// Scripts go by SHA1 after the first call on a connection, and still run when Redis has
// forgotten them (a restart or SCRIPT FLUSH between calls).
import { randomUUID } from "node:crypto";
import { waitFor } from "@gadget/testkit/wire";
import { describe, expect, it } from "vitest";
import { useRedisClients } from "../testing/use-redis.ts";
import { luaScript } from "./script.ts";

const client = useRedisClients();

const incrementLua = `return redis.call("incrby", KEYS[1], ARGV[1])`;

/**
 * The EVAL and EVALSHA commands Redis received for `key`, as MONITOR shows them. MONITOR starts
 * and stops asynchronously, so each end waits for a marker command to show up in it rather than
 * for a time: under load a fixed pause misses commands.
 */
async function watch(key: string): Promise<{ commands: string[]; stop: () => Promise<void> }> {
  // Not `client().monitor()`: ioredis marks a connection "monitoring" a tick after MONITOR's OK,
  // and a command of another client read in the same chunk as that OK is taken for a reply
  // nobody asked for ("Command queue state error"), which rejects `monitor()` (59 starts of 200
  // while another client sent commands). The connection recovers by itself (it reconnects and
  // sends MONITOR again), so this waits for it to be monitoring; the markers below are what tells
  // whether MONITOR sees everything.
  const monitor = client().duplicate({ monitor: true, lazyConnect: false });
  monitor.on("error", () => {});
  let monitoring = false;
  monitor.on("monitoring", () => {
    monitoring = true;
  });
  await waitFor(() => monitoring, 10_000, "MONITOR to start");
  const commands: string[] = [];
  const marks = new Set<string>();
  monitor.on("monitor", (_time: string, args: string[]) => {
    const name = String(args[0]).toLowerCase();
    if (name.startsWith("eval") && args.includes(key)) commands.push(name);
    if (name === "echo") marks.add(String(args[1]));
  });
  const mark = async (label: string) => {
    const word = `${key}:${label}`;
    await waitFor(
      async () => {
        await client().echo(word);
        return marks.has(word);
      },
      10_000,
      `MONITOR to show the marker ${word}`,
    );
  };
  await mark("start");
  return {
    commands,
    stop: async () => {
      await mark("end");
      monitor.disconnect();
    },
  };
}

describe("luaScript", () => {
  it("sends the script once per connection, then only its hash", async () => {
    const redis = client();
    const key = `t_script_${randomUUID().slice(0, 8)}`;
    const increment = luaScript(redis, "testIncrement", incrementLua);
    const seen = await watch(key);
    for (let index = 0; index < 5; index++) await increment([key], "2");
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

describe("luaScript with gather", () => {
  it("answers each of many calls made together, errors to their own caller", async () => {
    const redis = client();
    const prefix = `t_script_${randomUUID().slice(0, 8)}`;
    const checked = luaScript(
      redis,
      "testChecked",
      `if ARGV[1] == "bad" then return redis.error_reply("refused " .. KEYS[1]) end
       return redis.call("incrby", KEYS[1], ARGV[1])`,
      { gather: true },
    );
    const answers = await Promise.allSettled(
      Array.from({ length: 50 }, (_, index) =>
        checked([`${prefix}:${index % 5}`], index === 7 ? "bad" : String(index)),
      ),
    );
    expect(answers[7]).toMatchObject({
      status: "rejected",
      reason: { message: `refused ${prefix}:2` },
    });
    const values = answers.filter((answer) => answer.status === "fulfilled").length;
    expect(values).toBe(49);
    // Each key got the sum of its own calls, in order: key 0 sees 0, 5, 10… as running totals.
    expect(answers[5]).toMatchObject({ status: "fulfilled", value: 5 });
    expect(await redis.get(`${prefix}:2`)).toBe(
      String([2, 12, 17, 22, 27, 32, 37, 42, 47].reduce((a, b) => a + b)),
    );
  });

  it("still runs after Redis forgot its scripts", async () => {
    const redis = client();
    const key = `t_script_${randomUUID().slice(0, 8)}`;
    const increment = luaScript(redis, "testGatheredIncrement", incrementLua, { gather: true });
    await Promise.all([increment([key], "1"), increment([key], "1")]);
    await client().script("FLUSH");
    const after = await Promise.all([
      increment([key], "1"),
      increment([key], "1"),
      increment([key], "1"),
    ]);
    expect(after).toEqual([3, 4, 5]);
  });
});
