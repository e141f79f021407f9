// A real gadget-drone and two server processes on a real Redis Cluster (six redis-servers on
// loopback: 3 masters, 3 replicas, `redis-cli --cluster create`). Killing a master (SIGKILL; the
// cluster promotes its replica) costs the user nothing: the master holding the server's own keys
// (`{prefix}`: seq counters, locks, presence, slots) killed while a multi-pass turn streams, the
// turn completes with events 1..N, no gap, no duplicate, the model asked once per pass; the master
// holding the dispatch queue (`{prefix:bull:dispatch}`, another slot and here another master)
// killed while a turn waits queued for the drone's slot, that turn is dispatched once, when the
// slot frees during the failover, and completes.
import { randomUUID } from "node:crypto";
import path from "node:path";
import { keyTag, queuePrefix } from "@gadget/server/testing";
import { type RedisCluster, startRedisCluster } from "@gadget/services";
import { makeTempDir } from "@gadget/testkit";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { turnEvents, waitForTurn } from "./helpers.ts";
import {
  expectFourPasses,
  expectWholeTurn,
  type FailoverStage,
  finalStatuses,
  postTurn,
  startFailoverStage,
  turnThroughKill,
} from "./redis-failover.ts";

let cluster: RedisCluster;
let stage: FailoverStage;
/** A key in the slot of the server's own keys, and one in the dispatch queue's. */
let ownKey: string;
let queueKey: string;

/** Kills the master serving `key`; resolves with the port of the replica promoted in its place. */
async function killMasterOf(key: string): Promise<{ former: number; promoted: number }> {
  const former = await cluster.masterOf(key);
  await cluster.processes.find((node) => node.port === former)!.kill();
  return { former, promoted: await cluster.failedOver(key, former) };
}

beforeAll(async () => {
  // Removed after the file by the test setup, once afterAll has stopped every process.
  cluster = await startRedisCluster(path.join(await makeTempDir("gadget-cluster-drone-"), "redis"));
  // A prefix whose own keys and dispatch queue live on different masters, so each kill below
  // takes down one of them only (on 3 masters, 2 prefixes in 3 are such).
  let name = "";
  for (let tries = 0; tries < 20 && !name; tries++) {
    const candidate = `cluster_drone_${randomUUID().slice(0, 8)}`;
    const own = `${keyTag(`t_${candidate}`)}:turn-seq:any`;
    const queue = `${queuePrefix(`t_${candidate}`, "dispatch")}:dispatch:wait`;
    if ((await cluster.masterOf(own)) === (await cluster.masterOf(queue))) continue;
    [name, ownKey, queueKey] = [candidate, own, queue];
  }
  if (!name) throw new Error("no prefix found whose keys and queue are on different masters");
  stage = await startFailoverStage({ mongoUrl: inject("mongoUrl"), redisUrl: cluster.url, name });
}, 300_000);

afterAll(async () => {
  await stage?.close();
  await cluster?.stop();
});

describe("a real drone on a Redis Cluster", () => {
  it("completes a multi-pass turn whose keys' master is killed while it streams", async () => {
    const ended = await turnThroughKill(stage, () => killMasterOf(ownKey));
    expect(ended.killed.promoted).not.toBe(ended.killed.former);
    expectFourPasses(ended);
  }, 180_000);

  // The slot frees while the cluster elects: the server stores the first turn's `done` and starts
  // this one at once, while the drone may still be sending the first turn's last events; the drone
  // takes it all the same (an ended turn holds no slot), so it is dispatched once.
  it("dispatches once a queued turn whose queue's master is killed, when the slot frees", async () => {
    const before = stage.model.chatRequests.length;
    // The drone's one slot is held by a turn whose model answer waits for the test.
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    stage.model.enqueue(async () => {
      await released;
      return { text: "The first is done." };
    });
    const holding = await postTurn(stage, "Holding", "Hold the drone's slot");
    await stage.model.waitForRequests(before + 1, 60_000);
    stage.model.enqueue({ text: "The queued one is done." });
    const queued = await postTurn(stage, "Queued", "Wait for the slot");
    expect((await stage.user.get(`/api/turns/${queued}`)).body.turn.status).toBe("queued");

    // The queue's master dies with the turn queued; the slot frees while it is down, so the
    // turn's dispatch job is added while the cluster fails over.
    const former = await cluster.masterOf(queueKey);
    await cluster.processes.find((node) => node.port === former)!.kill();
    release();
    const promoted = await cluster.failedOver(queueKey, former);
    expect(promoted).not.toBe(former);

    const [first, second] = await Promise.all(
      [holding, queued].map((turnId) => waitForTurn(stage.user, turnId, finalStatuses, 120_000)),
    );
    expectWholeTurn(first, await turnEvents(stage.user, holding), "The first is done.");
    expectWholeTurn(second, await turnEvents(stage.user, queued), "The queued one is done.");
    // One work order reached the drone for the queued turn: the model was asked once for it.
    const asked = stage.model.chatRequests.slice(before);
    expect(asked).toHaveLength(2);
    expect(
      asked.filter((body) => JSON.stringify(body.messages).includes("Wait for the slot")),
    ).toHaveLength(1);
  }, 180_000);
});
