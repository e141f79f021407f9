// The server on a Sentinel-watched Redis (a master, its replica, three Sentinels on loopback): two
// server processes and a drone on each run a turn through it, and the master killed mid-turn
// (SIGKILL; the Sentinels promote the replica) costs the turn nothing: it completes, its events
// read back 1..N with no gap or duplicate, and it was dispatched once. A turn after it runs too.
import path from "node:path";
import { type RedisSentinelSetup, startRedisSentinel } from "@gadget/services";
import { makeTempDir } from "@gadget/testkit";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { expectWholeTurn } from "../testing/failover-checks.ts";
import { type FailoverFleet, startFailoverFleet, streamTurn } from "../testing/failover-turns.ts";

let sentinel: RedisSentinelSetup;
let fleet: FailoverFleet;

beforeAll(async () => {
  // Removed after the file by the test setup, once afterAll has stopped every process.
  sentinel = await startRedisSentinel(path.join(await makeTempDir("gadget-sentinel-"), "redis"));
  fleet = await startFailoverFleet({
    mongoUrl: inject("mongoUrl"),
    redisUrl: sentinel.url,
    name: "sentinel",
  });
}, 180_000);

afterAll(async () => {
  await fleet?.close();
  await sentinel?.stop();
});

describe("on Redis with Sentinel", () => {
  it("streams a turn through two servers", async () => {
    expectWholeTurn(await streamTurn(fleet, { batches: 4 }));
  }, 120_000);

  it("completes a turn whose master is killed mid-turn, losing and repeating nothing", async () => {
    const master = await sentinel.masterPort();
    let promoted = 0;
    const turn = await streamTurn(fleet, {
      batches: 12,
      killAfter: 3,
      during: async () => {
        await sentinel.processes.find((node) => node.port === master)!.kill();
        promoted = await sentinel.failedOver(master);
      },
    });
    expect(promoted).not.toBe(master);
    expectWholeTurn(turn);
    expectWholeTurn(await streamTurn(fleet, { batches: 2 }));
  }, 180_000);
});
