// The server on a real Redis Cluster (3 masters, 3 replicas on loopback): two server processes
// and a drone on each run turns through it, and a master killed mid-turn (SIGKILL; its replica is
// promoted by the cluster itself) costs the turn nothing: it completes, its events read back 1..N
// with no gap or duplicate, and it was dispatched once. A turn after the failover runs as well,
// and the admin CLI still reaches browsers on both servers through the sharded adapter.
import path from "node:path";
import { type RedisCluster, startRedisCluster } from "@gadget/services";
import { makeTempDir } from "@gadget/testkit";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { disconnectSignIns } from "../admin/disconnect.ts";
import { sha256 } from "../crypto/tokens.ts";
import { IdeClient } from "../testing/api-client.ts";
import { expectWholeTurn } from "../testing/failover-checks.ts";
import { type FailoverFleet, startFailoverFleet, streamTurn } from "../testing/failover-turns.ts";
import { keyTag } from "./key-space.ts";

let cluster: RedisCluster;
let fleet: FailoverFleet;

beforeAll(async () => {
  // Removed after the file by the test setup, once afterAll has stopped every process.
  cluster = await startRedisCluster(path.join(await makeTempDir("gadget-cluster-"), "redis"));
  fleet = await startFailoverFleet({
    mongoUrl: inject("mongoUrl"),
    redisUrl: cluster.url,
    name: "cluster",
  });
}, 180_000);

afterAll(async () => {
  await fleet?.close();
  await cluster?.stop();
});

describe("on a Redis Cluster", () => {
  it("streams a turn through two servers", async () => {
    expectWholeTurn(await streamTurn(fleet, { batches: 4 }));
  }, 120_000);

  it("completes a turn whose keys' master is killed mid-turn, losing and repeating nothing", async () => {
    // The master holding the server's own keys: the turn's seq counter, locks, presence, slots.
    const key = `${keyTag(fleet.redisPrefix)}:turn-seq:any`;
    const master = await cluster.masterOf(key);
    let promoted = 0;
    const turn = await streamTurn(fleet, {
      batches: 12,
      killAfter: 3,
      during: async () => {
        await cluster.processes.find((node) => node.port === master)!.kill();
        promoted = await cluster.failedOver(key, master);
      },
    });
    expect(promoted).not.toBe(master);
    expectWholeTurn(turn);
    // And the fleet goes on: a new turn is dispatched and streams through the promoted replica.
    expectWholeTurn(await streamTurn(fleet, { batches: 2 }));
  }, 180_000);

  it("lets the admin CLI close a user's browser sockets on both servers, through the sharded adapter", async () => {
    const token = fleet.user.token!;
    const browsers = await Promise.all(
      [fleet.pair.first.url, fleet.pair.second.url].map((url) => IdeClient.connect(url, token)),
    );
    const reasons = browsers.map(
      (browser) => new Promise<string>((resolve) => browser.socket.once("disconnect", resolve)),
    );
    // What `gadget-code user reset-password` does after the password changed.
    await disconnectSignIns(cluster.url, fleet.redisPrefix, [sha256(token)]);
    const closed = await Promise.race([
      Promise.all(reasons),
      new Promise<string[]>((resolve) => setTimeout(() => resolve(["still connected"]), 20_000)),
    ]);
    expect(closed).toEqual(["io server disconnect", "io server disconnect"]);
  }, 60_000);
});
