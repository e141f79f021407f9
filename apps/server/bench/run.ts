// Benchmarks of the gadget-code server, each next to a raw baseline measured in the same run:
// dispatch latency with 100 drones, live relay at 5,000 events/s over 100 turns, a browser
// catching up on a 20,000-event turn, webhook delivery after a turn's `done`, and the memory of 2,000 idle drones plus 2,000 subscribed
// browsers. Loopback only; every loop is bounded. Each subject is a module of this folder; this
// file runs them (`tsx bench/run.ts [dispatch [--explain] | dispatch-labels | relay | relay:<events/s> | relay-starts |
// relay-small | catch-up | webhooks | steering | memory | curve]`) and prints one table; `curve`
// is the cost curve over fleet sizes and server processes (curve-report.ts says its flags).
// BENCH_PROFILE=<dir> writes a CPU profile of the server; BENCH_BUCKETS=1 prints each relay run's
// latencies per half second of sending (where a run's p99 comes from), BENCH_BUCKETS=<ms> per <ms>.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { findRepoRoot, startServices } from "@gadget/services";
import { benchCatchUp } from "./catch-up.ts";
import { benchCurve } from "./curve-report.ts";
import { benchDispatch } from "./dispatch.ts";
import { rows, watchedProcesses } from "./harness.ts";
import { benchMemory } from "./memory.ts";
import { benchRelay } from "./relay.ts";
import { benchSteering } from "./steering.ts";
import { benchWebhooks } from "./webhooks.ts";

async function main() {
  const dataDir = await mkdtemp(path.join(tmpdir(), "gadget-bench-"));
  const services = await startServices({
    rootDir: findRepoRoot(),
    dataDir,
    mongoUrl: process.env.MONGO_URL,
    redisUrl: process.env.REDIS_URL,
  });
  console.error(`services: ${services.mongoKind}, ${services.redisKind}`);
  const env = { mongoUrl: services.mongoUrl, redisUrl: services.redisUrl };
  // The harness starts Redis, then the database, for what MONGO_URL / REDIS_URL did not give.
  const privatePids = [...services.pids];
  if (services.redisKind !== "external") watchedProcesses.set("redis", privatePids.shift()!);
  if (services.mongoKind !== "external") watchedProcesses.set("database", privatePids.shift()!);
  const only = process.argv[2];
  try {
    if (!only || only === "dispatch") {
      // BENCH_BEFORE_SERVER=<another checkout's apps/server>[,<another>…]: those builds beside
      // this one, all taking turns sample by sample. `dispatch --explain`: the commands of one
      // dispatch by name, instead of its timings.
      const before = (process.env.BENCH_BEFORE_SERVER ?? "").split(",").filter(Boolean);
      await benchDispatch(env, {
        before: before.map((serverDirectory, index) => ({
          serverDirectory,
          name: index === 0 ? "before" : `before ${index + 1}`,
        })),
        explain: process.argv.includes("--explain"),
      });
    }
    if (!only || only === "dispatch-labels") await benchDispatch(env, { labelSets: 10 });
    if (!only || only === "relay") {
      await benchRelay(env, {
        turns: 100,
        eventsPerSecond: 5_000,
        seconds: 5,
        batchIntervalMs: 100,
      });
    }
    if (only?.startsWith("relay:")) {
      await benchRelay(env, {
        turns: 100,
        eventsPerSecond: Number(only.slice(6)),
        seconds: 5,
        batchIntervalMs: 100,
      });
    }
    if (only === "relay-starts") {
      await benchRelay(env, {
        turns: 100,
        eventsPerSecond: 5_000,
        seconds: 3,
        batchIntervalMs: 100,
        starts: Number(process.env.BENCH_ROUNDS ?? 5),
      });
    }
    if (only === "relay-small") {
      await benchRelay(env, { turns: 10, eventsPerSecond: 500, seconds: 2, batchIntervalMs: 100 });
    }
    if (!only || only === "catch-up") await benchCatchUp(env, 20_000);
    if (!only || only === "webhooks") await benchWebhooks(env);
    if (!only || only === "steering") await benchSteering(env);
    if (!only || only === "memory") await benchMemory(env, 2_000, 2_000);
    if (!only || only === "curve") await benchCurve(env);
  } finally {
    await services.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
  console.log(
    `\n## gadget-code server benchmarks (${services.mongoKind} + ${services.redisKind}, loopback)\n`,
  );
  console.log("| benchmark | measure | gadget-code | raw baseline | target |");
  console.log("|---|---|---|---|---|");
  for (const row of rows) {
    console.log(
      `| ${row.benchmark} | ${row.measure} | ${row.gadget} | ${row.baseline} | ${row.target} |`,
    );
  }
  process.exit(0);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
