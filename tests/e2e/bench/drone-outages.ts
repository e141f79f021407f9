// How soon a turn streams again after an outage: a real gadget-drone streams a long command's
// output (ten lines a second) through a server whose own FerretDB and Redis are killed for 3 s,
// five times each. Measured from the service answering again to the next event reaching a
// watching browser; beside it, in the same outages, the floor: a bare client of the same service
// (the MongoDB driver inserting, ioredis pinging every 20 ms) getting its first success.
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { startTestServer } from "@gadget/server/testing";
import {
  databaseUrl,
  findRepoRoot,
  type RestartableService,
  startRestartableMongo,
  startRestartableRedis,
} from "@gadget/services";
import { startScriptedModel } from "@gadget/testkit";
import { percentile } from "@gadget/testkit/measure";
import { IdeClient, signup, waitFor } from "@gadget/testkit/wire";
import { createRemote } from "gadget-drone/testing";
import { Redis } from "ioredis";
import mongoose from "mongoose";
import { registerWithCli } from "../drone/helpers.ts";
import { droneBin } from "../paths.ts";

const rounds = Number(process.env.BENCH_OUTAGES ?? 5);
const downMs = 3_000;

/** Polls `probe` every 20 ms until it succeeds; resolves with when it did. */
async function firstSuccess(probe: () => Promise<unknown>): Promise<number> {
  for (;;) {
    try {
      await probe();
      return performance.now();
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

async function main(): Promise<void> {
  const base = await mkdtemp(path.join(tmpdir(), "gadget-bench-outages-"));
  const services: RestartableService[] = [];
  let drone: ReturnType<typeof spawn> | null = null;
  let remoteDirectory: string | null = null;
  try {
    const mongo = await startRestartableMongo(findRepoRoot(), path.join(base, "mongo"));
    const redis = await startRestartableRedis(path.join(base, "redis"));
    services.push(mongo, redis);
    const mongoUrl = databaseUrl(mongo.url, "bench_outages");
    const server = await startTestServer({ mongoUrl, redisUrl: redis.url, droneGraceMs: 60_000 });
    const model = await startScriptedModel({ apiKey: "sk-bench" });
    const user = await signup(server.url, "bench-outages");
    const remote = await createRemote({ "README.md": "# Outages\n" });
    remoteDirectory = path.dirname(remote.bare);
    const project = await user.post("/api/projects", { name: "Outages", gitUrl: remote.bare });
    const session = await user.post(`/api/projects/${project.body.project._id}/sessions`, {
      name: "streaming",
    });
    // A real drone, registered through its CLI.
    const home = path.join(base, "home");
    const config = path.join(home, "drone.json");
    const registered = await registerWithCli(user, server.url, {
      name: "real",
      workspace: path.join(home, "workspaces"),
      config,
      home,
    });
    if (registered.code !== 0)
      throw new Error(`register exited ${registered.code}: ${registered.stderr}`);
    const env = { ...process.env, HOME: home, GADGET_DRONE_HEARTBEAT_MS: "1000" };
    drone = spawn(process.execPath, [droneBin, "start", "--json", "--config", config], {
      env,
      stdio: "ignore",
    });
    await waitFor(
      async () =>
        (
          (await user.get("/api/drones")).body.drones as Array<{ name: string; status: string }>
        ).some((entry) => entry.name === "real" && entry.status === "online"),
      30_000,
      "the drone online",
    );
    const provider = await user.post("/api/providers", {
      name: "bench",
      baseUrl: model.baseUrl,
      apiKey: "sk-bench",
      modelId: "scripted-model",
    });
    model.enqueue(
      {
        toolCalls: [
          {
            name: "run_command",
            arguments: {
              command: `node -e "let i = 0; setInterval(() => console.log('tick ' + ++i), 100)"`,
              timeout_ms: 600_000,
            },
          },
        ],
      },
      { text: "Stopped." },
    );
    const created = await user.post(`/api/sessions/${session.body.session._id}/turns`, {
      prompt: "Stream for a while",
      providerId: provider.body.provider._id,
      droneId: (
        (await user.get("/api/drones")).body.drones as Array<{ _id: string; name: string }>
      ).find((entry) => entry.name === "real")?._id,
    });
    const turnId = created.body.turn._id as string;
    const browser = await IdeClient.connect(server.url, user.token ?? "");
    const arrivals: number[] = [];
    browser.socket.on("turn_events", ({ turnId: id }) => {
      if (id === turnId) arrivals.push(performance.now());
    });
    await browser.subscribe({ turnId });
    await waitFor(() => arrivals.length > 20, 60_000, "the turn streaming").catch(async (error) => {
      const turn = (await user.get(`/api/turns/${turnId}`)).body.turn;
      throw new Error(
        `${(error as Error).message}: turn ${turn?.status} ${JSON.stringify(turn?.error)}`,
      );
    });

    const rawMongo = mongoose.createConnection(mongoUrl, { serverSelectionTimeoutMS: 500 });
    const rawRedis = new Redis(redis.url, { maxRetriesPerRequest: 0, retryStrategy: () => 20 });
    rawRedis.on("error", () => {});
    const results: Record<string, { turn: number[]; floor: number[] }> = {
      database: { turn: [], floor: [] },
      redis: { turn: [], floor: [] },
    };
    for (const [kind, service] of [
      ["database", mongo],
      ["redis", redis],
    ] as const) {
      for (let round = 0; round < rounds; round++) {
        await new Promise((resolve) => setTimeout(resolve, 3_000));
        await service.kill();
        await new Promise((resolve) => setTimeout(resolve, downMs));
        await service.start();
        const back = performance.now();
        const floorProbe =
          kind === "database"
            ? () => rawMongo.collection("bench_probe").insertOne({ at: new Date() })
            : () => rawRedis.ping();
        const [streaming, floor] = await Promise.all([
          waitFor(
            () => arrivals.find((at) => at > back),
            120_000,
            `the turn streaming after ${kind}`,
          ),
          firstSuccess(floorProbe),
        ]);
        results[kind]!.turn.push((streaming as number) - back);
        results[kind]!.floor.push(floor - back);
      }
    }
    await user.post(`/api/turns/${turnId}/cancel`);
    browser.close();
    await rawMongo.close();
    rawRedis.disconnect();

    console.log(
      `\n### Outages: the turn streaming again after its service answers again (${rounds} outages of ${downMs / 1000} s each)\n`,
    );
    console.log(
      "| service killed | turn streams again p50 / p95 ms | bare client's first success p50 / p95 ms (floor) | target |",
    );
    console.log("|---|---|---|---|");
    for (const [kind, target] of [
      ["database", "< 2 000"],
      ["redis", "< 3 000"],
    ] as const) {
      const { turn, floor } = results[kind]!;
      console.log(
        `| ${kind} (${kind === "redis" ? "back empty" : "back on its data"}) | ${percentile(turn, 50).toFixed(0)} / ${percentile(turn, 95).toFixed(0)} | ${percentile(floor, 50).toFixed(0)} / ${percentile(floor, 95).toFixed(0)} | ${target} |`,
      );
    }
    drone.kill("SIGKILL");
    drone = null;
    await model.close();
    await server.close();
  } finally {
    drone?.kill("SIGKILL");
    await Promise.all(services.map((service) => service.stop()));
    await rm(base, { recursive: true, force: true });
    if (remoteDirectory) await rm(remoteDirectory, { recursive: true, force: true });
  }
}

await main();
process.exit(0);
