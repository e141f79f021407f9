// BullMQ through the server's own connections (RedisConnections, JobQueues) on a real Redis
// Cluster (3 masters, 3 replicas on loopback): a worker goes on taking jobs after its queue's
// master hung and came back. While the master and its replica are stopped (SIGSTOP) no node can
// serve the queue's slot and every node says `cluster_state:fail`; the worker's blocking read
// gets no answer, so BullMQ renews that connection and awaits the Cluster's `connect()`, which
// ioredis never settled when its ready check met `fail`: the worker took no job again, and a
// queued turn whose dispatch job it was waited for good (decision 0054).
import path from "node:path";
import { createLogger } from "@gadget/logging";
import { type RedisCluster, startRedisCluster } from "@gadget/services";
import { makeTempDir } from "@gadget/testkit";
import { waitFor } from "@gadget/testkit/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RedisClient, RedisConnections } from "./connections.ts";
import { JobQueues } from "./job-queues.ts";
import { queuePrefix } from "./key-space.ts";

const redisPrefix = "jobs_cluster";
let cluster: RedisCluster;
let connections: RedisConnections;
let jobs: JobQueues;

beforeAll(async () => {
  // Removed after the file by the test setup, once afterAll has stopped every process.
  cluster = await startRedisCluster(path.join(await makeTempDir("gadget-jobs-cluster-"), "redis"));
  connections = new RedisConnections(cluster.url, {
    commandTimeoutMs: 10_000,
    logger: createLogger({ level: "silent" }),
  });
  jobs = new JobQueues(connections, { redisPrefix, logger: createLogger({ level: "silent" }) });
}, 120_000);

afterAll(async () => {
  for (const node of cluster?.processes ?? []) node.resume();
  await jobs?.close();
  await connections?.close();
  await cluster?.stop();
});

/** Resolves once `client` has ended (its every node connection closed). */
function disconnected(client: RedisClient): Promise<void> {
  const ended = new Promise<void>((resolve) => client.once("end", () => resolve()));
  client.disconnect();
  return ended;
}

describe("BullMQ on a Redis Cluster", () => {
  it("goes on taking jobs after the queue's master and its replica hung and came back", async () => {
    const taken: string[] = [];
    jobs.work<{ name: string }>(
      "dispatch",
      async (job) => {
        taken.push(job.data.name);
      },
      { concurrency: 2 },
    );
    const queue = jobs.queue<{ name: string }>("dispatch");
    await queue.add("dispatch", { name: "before" }, { removeOnComplete: true });
    await waitFor(async () => taken.includes("before") || null, 30_000, "the first job taken");

    const master = await cluster.masterOf(`${queuePrefix(redisPrefix, "dispatch")}:dispatch:wait`);
    const hung = [master, ...(await cluster.replicasOf(master))].map(
      (port) => cluster.processes.find((node) => node.port === port)!,
    );
    const witness = cluster.processes.find((node) => !hung.includes(node))!;
    const probe = connections.forJobs("probe");
    await waitFor(async () => probe.status === "ready" || null, 30_000, "the probe connected");
    for (const node of hung) node.pause();
    try {
      await waitFor(
        async () => (await cluster.stateSeenBy(witness.port)) === "fail" || null,
        30_000,
        "the cluster to see the queue's slot unserved",
      );
      // What the worker does when its blocking read goes unanswered: close, connect again.
      await disconnected(probe);
      const outcome = await Promise.race([
        probe.connect().then(() => "connected"),
        new Promise((resolve) => setTimeout(() => resolve("no answer within 10 s"), 10_000)),
      ]);
      expect(outcome).toBe("connected");
      // Long enough for the worker's own blocking read (5 s, then 1 s grace) to be renewed.
      await new Promise((resolve) => setTimeout(resolve, 4_000));
    } finally {
      for (const node of hung) node.resume();
    }
    await waitFor(
      async () => (await cluster.stateSeenBy(witness.port)) === "ok" || null,
      60_000,
      "the cluster to serve every slot again",
    );

    await queue.add("dispatch", { name: "after" }, { removeOnComplete: true });
    await waitFor(
      async () => taken.includes("after") || null,
      30_000,
      "the job added after the master came back taken",
    );
  }, 180_000);
});
