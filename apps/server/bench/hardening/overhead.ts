// (a) What the new checks cost: `POST /api/sessions/:id/turns` and a drone's event batch on both
// builds, measured in alternating rounds.
import { ms, now, percentile } from "@gadget/testkit/measure";
import type { ServerProcess } from "../../src/testing/server-process.ts";
import {
  BenchDrone,
  type Build,
  type Env,
  overheadRounds,
  perRound,
  prepareFixtures,
  readings,
  rows,
  startBuild,
  warmup,
} from "./harness.ts";

interface OverheadRun {
  build: Build;
  server: ServerProcess;
  drone: BenchDrone;
  batchTurn: string;
  turns: number[][];
  batches: number[][];
  created: number;
}

/** One timed `POST /api/sessions/:id/turns`; the turn is cancelled after (untimed). */
async function timedTurn(entry: OverheadRun): Promise<number> {
  const { turnUsers } = entry.build.fixtures!;
  const { user, workspace } = turnUsers[entry.created++ % turnUsers.length]!;
  const started = now();
  const posted = await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
    prompt: `measured prompt ${entry.created}`,
    providerId: workspace.providerId,
  });
  const elapsed = now() - started;
  if (posted.status !== 202) {
    throw new Error(
      `${entry.build.label}: POST turn ${posted.status} ${JSON.stringify(posted.body)}`,
    );
  }
  const cancelled = await user.post(`/api/turns/${posted.body.turn._id}/cancel`);
  if (cancelled.status >= 300) throw new Error(`${entry.build.label}: cancel ${cancelled.status}`);
  return elapsed;
}

/** (a); with `measure` false only the servers' fixtures are made (for (b) alone). */
export async function benchOverhead(env: Env, builds: Build[], measure: boolean): Promise<void> {
  console.error(`overhead: starting ${builds.map((build) => build.label).join(" and ")}`);
  const servers = await Promise.all(builds.map((build) => startBuild(env, build)));
  const runs: OverheadRun[] = [];
  try {
    for (const [index, build] of builds.entries()) {
      const server = servers[index]!;
      build.fixtures = await prepareFixtures(server);
      const { batch } = build.fixtures;
      const drone = await BenchDrone.connect(server.url, build.drone, batch);
      const posted = await batch.user.post(`/api/sessions/${batch.workspace.sessionId}/turns`, {
        prompt: "a turn that streams measured batches",
        providerId: batch.workspace.providerId,
      });
      const batchTurn = String(posted.body.turn._id);
      const entry = { build, server, drone, batchTurn, turns: [], batches: [], created: 0 };
      runs.push(entry);
      await drone.accepted(batchTurn);
    }
    if (!measure) return;
    console.error("overhead: measuring");
    for (const entry of runs) {
      for (let index = 0; index < warmup; index++) {
        await timedTurn(entry);
        await entry.drone.batch(entry.batchTurn, 20);
      }
    }
    for (let round = 0; round < overheadRounds; round++) {
      const order = round % 2 === 0 ? runs : [...runs].reverse();
      for (const entry of order) {
        const latencies: number[] = [];
        for (let index = 0; index < perRound; index++) latencies.push(await timedTurn(entry));
        entry.turns.push(latencies);
      }
      for (const entry of order) {
        const latencies: number[] = [];
        for (let index = 0; index < perRound; index++) {
          latencies.push(await entry.drone.batch(entry.batchTurn, 20));
        }
        entry.batches.push(latencies);
      }
    }
    for (const entry of runs) await entry.drone.batch(entry.batchTurn, 1, true);
  } finally {
    for (const entry of runs) entry.drone.close();
    await Promise.all(servers.map((server) => server.stop()));
  }
  if (!measure) return;
  const samples = overheadRounds * perRound;
  const [current, before] = [
    runs.find((entry) => entry.build.label === "this build")!,
    runs.find((entry) => entry.build.label === "before"),
  ];
  for (const [kind, benchmark, pick] of [
    [
      "POST turn",
      `\`POST /api/sessions/:id/turns\` (${samples} requests, no drone, each turn cancelled after; ${overheadRounds} rounds alternating builds)`,
      (entry: OverheadRun) => entry.turns,
    ],
    [
      "event batch",
      `Event batch of 20 \`token\` events, drone emit → ack (${samples} batches on one running turn; same rounds)`,
      (entry: OverheadRun) => entry.batches,
    ],
  ] as const) {
    const figures = (entry: OverheadRun | undefined) => {
      if (!entry) return null;
      const perRoundP50 = pick(entry).map((latencies) => percentile(latencies, 50));
      const all = pick(entry).flat();
      return {
        p50: percentile(all, 50),
        p95: percentile(all, 95),
        low: Math.min(...perRoundP50),
        high: Math.max(...perRoundP50),
      };
    };
    const mine = figures(current)!;
    const theirs = figures(before);
    const show = (value: ReturnType<typeof figures>) =>
      value
        ? `${ms(value.p50)} / ${ms(value.p95)} (round p50s ${value.low.toFixed(1)}–${value.high.toFixed(1)})`
        : "n/a";
    rows.push({
      benchmark,
      measure: "p50 / p95",
      current: show(mine),
      before: show(theirs),
      target: "within noise",
    });
    if (theirs) {
      const difference = mine.p50 - theirs.p50;
      const inside = mine.p50 <= theirs.high && mine.p50 >= theirs.low;
      readings.push(
        `${kind}: p50 ${difference >= 0 ? "+" : ""}${difference.toFixed(1)} ms (${((difference / theirs.p50) * 100).toFixed(0)}%) beside the build before; its round p50s span ${theirs.low.toFixed(1)}–${theirs.high.toFixed(1)} ms, so this is ${inside ? "within" : "outside"} that noise.`,
      );
    } else {
      readings.push(`${kind}: p50 ${ms(mine.p50)}; no build before to compare with.`);
    }
  }
}
