// A real gadget-drone and two server processes on a Sentinel-watched Redis (a master, its replica
// and three Sentinels on loopback): the master killed (SIGKILL; the Sentinels promote the replica)
// while a multi-pass turn streams costs the turn nothing: it completes with events 1..N, no gap,
// no duplicate, dispatched once, the model asked once per pass.
import { randomUUID } from "node:crypto";
import path from "node:path";
import { type RedisSentinelSetup, startRedisSentinel } from "@gadget/services";
import { makeTempDir } from "@gadget/testkit";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  expectFourPasses,
  type FailoverStage,
  startFailoverStage,
  turnThroughKill,
} from "./redis-failover.ts";

let sentinel: RedisSentinelSetup;
let stage: FailoverStage;

beforeAll(async () => {
  // Removed after the file by the test setup, once afterAll has stopped every process.
  sentinel = await startRedisSentinel(
    path.join(await makeTempDir("gadget-sentinel-drone-"), "redis"),
  );
  stage = await startFailoverStage({
    mongoUrl: inject("mongoUrl"),
    redisUrl: sentinel.url,
    name: `sentinel_drone_${randomUUID().slice(0, 8)}`,
  });
}, 300_000);

afterAll(async () => {
  await stage?.close();
  await sentinel?.stop();
});

describe("a real drone on Redis with Sentinel", () => {
  it("completes a multi-pass turn whose master is killed while it streams", async () => {
    const ended = await turnThroughKill(stage, async () => {
      const former = await sentinel.masterPort();
      await sentinel.processes.find((node) => node.port === former)!.kill();
      return { former, promoted: await sentinel.failedOver(former) };
    });
    expect(ended.killed.promoted).not.toBe(ended.killed.former);
    expectFourPasses(ended);
  }, 180_000);
});
