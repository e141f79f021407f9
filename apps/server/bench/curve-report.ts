// Runs the cost curve (curve.ts) over its sizes and process counts, beside the raw baselines of
// the same run (the store floor of a dispatch, a bare Socket.IO server's RSS per connection), and
// adds its rows to the table; BENCH_CURVE_PLOT=<file.png> also draws it (an SVG screenshotted by
// headless Chromium: no plotting dependency). BENCH_CURVE_LARGE=1 adds 10,000 drones + 10,000
// browsers (long: connecting 20,000 sockets on this machine takes minutes per point; the idle
// fleet lives in child processes of at most 5,000 sockets each, curve-fleet.ts).
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ms, percentile } from "@gadget/testkit/measure";
import { setupWorkspace, signup } from "@gadget/testkit/wire";
import { type CurvePoint, measurePoint } from "./curve.ts";
import { storeFloor } from "./dispatch.ts";
import { type Env, rows, startServer } from "./harness.ts";
import { bareServerRss } from "./memory.ts";

export async function benchCurve(env: Env) {
  const sizes = process.env.BENCH_CURVE_SIZES
    ? process.env.BENCH_CURVE_SIZES.split(",").map(Number)
    : [100, 1_000, ...(process.env.BENCH_CURVE_LARGE ? [10_000] : [])];
  const processCounts = process.env.BENCH_CURVE_PROCESSES
    ? process.env.BENCH_CURVE_PROCESSES.split(",").map(Number)
    : [1, 2, 4];
  console.error("curve: baselines");
  const floor = await floorOfDispatch(env);
  const bare = await bareServerRss(1_000, 1_000);
  const bareKb = ((bare.loaded - bare.idle) * 1024) / 2_000;
  console.error(
    `curve baselines: ${JSON.stringify({ floor50: percentile(floor, 50), floor99: percentile(floor, 99), bareKb })}`,
  );
  const points: CurvePoint[] = [];
  for (const processes of processCounts) {
    for (const drones of sizes) {
      try {
        const point = await measurePoint(env, drones, processes);
        // Each point as it is measured: a run stopped later keeps it.
        console.error(`curve point: ${JSON.stringify(point)}`);
        points.push(point);
      } catch (error) {
        // Where this machine stops: the table says so instead of losing the points before.
        console.error(`curve: ${drones} drones over ${processes} process(es) failed:`, error);
        rows.push({
          benchmark: `Cost curve, ${drones} drones + ${drones} browsers, ${processes} process(es)`,
          measure: "—",
          gadget: `did not complete: ${(error as Error).message.slice(0, 120)}`,
          baseline: "",
          target: "",
        });
      }
    }
  }
  for (const point of points) {
    rows.push({
      benchmark: `Cost curve, ${point.drones} drones + ${point.browsers} browsers, ${point.processes} process(es) (connected in ${point.connectSeconds.toFixed(0)} s)`,
      measure:
        "dispatch p50 / p99 · relay p50 / p99 at a fixed rate · RSS per connection · Redis commands per heartbeat / per event · database operations per event · peak RSS (MiB)",
      gadget: [
        `${ms(point.dispatchP50)} / ${ms(point.dispatchP99)} (${(point.dispatchP50 / percentile(floor, 50)).toFixed(1)}× floor)`,
        `${ms(point.relayP50)} / ${ms(point.relayP99)} at ${point.eventsPerSecond.toFixed(0)} events/s${point.lost ? ` (${point.lost} late or lost)` : ""}`,
        `${point.rssPerConnectionKb.toFixed(0)} KB`,
        `${point.redisPerHeartbeat.toFixed(2)} / ${point.redisPerEvent.toFixed(2)}`,
        `${point.databasePerEvent.toFixed(3)} (per heartbeat ${point.databasePerHeartbeat.toFixed(3)})`,
        Object.entries(point.peakRssMb)
          .map(([name, mb]) => `${name} ${mb}`)
          .join(", "),
      ].join(" · "),
      baseline: `store floor ${ms(percentile(floor, 50))} / ${ms(percentile(floor, 99))}; bare Socket.IO ${bareKb.toFixed(0)} KB per connection`,
      target: "flat per operation",
    });
  }
  console.error(JSON.stringify({ floor50: percentile(floor, 50), bareKb, points }));
  if (process.env.BENCH_CURVE_PLOT)
    await plot(points, percentile(floor, 50), bareKb, process.env.BENCH_CURVE_PLOT);
}

async function floorOfDispatch(env: Env): Promise<number[]> {
  const { server, database, url } = await startServer(env, `floor_${randomUUID().slice(0, 6)}`);
  try {
    const user = await signup(url, "floor");
    const workspace = await setupWorkspace(user);
    return await storeFloor(database, user.token!, workspace, 100);
  } finally {
    await server.stop();
    await database.connection.dropDatabase();
    await database.close();
  }
}

const colours = ["#1f6feb", "#d9480f", "#2f9e44", "#7048e8"];

/** Three panels (dispatch p50, relay p99, RSS per connection) against drones, a line per process count. */
export async function plot(points: CurvePoint[], floor: number, bareKb: number, file: string) {
  const panels: Array<{
    title: string;
    value: (point: CurvePoint) => number;
    baseline: number;
    from?: number;
  }> = [
    {
      title: "dispatch p50 (ms); dashed: store floor",
      value: (p) => p.dispatchP50,
      baseline: floor,
    },
    { title: "relay p99 (ms) at a fixed event rate", value: (p) => p.relayP99, baseline: 0 },
    {
      title: "RSS per connection (KB), from 1,000; dashed: bare Socket.IO",
      value: (p) => p.rssPerConnectionKb,
      baseline: bareKb,
      // At 100 connections the process's own growth and garbage collection swamp the figure.
      from: 1_000,
    },
  ];
  const width = 420;
  const height = 300;
  const pad = { left: 50, right: 30, top: 40, bottom: 45 };
  const sizes = [...new Set(points.map((point) => point.drones))].sort((a, b) => a - b);
  const processCounts = [...new Set(points.map((point) => point.processes))].sort((a, b) => a - b);
  const logMin = Math.log10(Math.min(...sizes));
  const logSpan = Math.max(1, Math.log10(Math.max(...sizes)) - logMin);
  const parts: string[] = [];
  panels.forEach((panel, panelIndex) => {
    const x0 = panelIndex * width;
    const shown = points.filter((point) => point.drones >= (panel.from ?? 0));
    const top = Math.max(panel.baseline, ...shown.map(panel.value)) * 1.15 || 1;
    const xOf = (drones: number) =>
      x0 + pad.left + ((Math.log10(drones) - logMin) / logSpan) * (width - pad.left - pad.right);
    const yOf = (value: number) => pad.top + (1 - value / top) * (height - pad.top - pad.bottom);
    parts.push(
      `<text x="${x0 + width / 2}" y="20" text-anchor="middle" font-size="13">${panel.title}</text>`,
      `<line x1="${x0 + pad.left}" y1="${height - pad.bottom}" x2="${x0 + width - pad.right}" y2="${height - pad.bottom}" stroke="#333"/>`,
      `<line x1="${x0 + pad.left}" y1="${pad.top}" x2="${x0 + pad.left}" y2="${height - pad.bottom}" stroke="#333"/>`,
    );
    for (const tick of [0, 0.5, 1]) {
      parts.push(
        `<text x="${x0 + pad.left - 5}" y="${yOf(top * tick) + 4}" text-anchor="end" font-size="11">${(top * tick).toFixed(top < 10 ? 1 : 0)}</text>`,
      );
    }
    for (const drones of sizes) {
      parts.push(
        `<text x="${xOf(drones)}" y="${height - pad.bottom + 16}" text-anchor="middle" font-size="11">${drones.toLocaleString("en")}</text>`,
      );
    }
    parts.push(
      `<text x="${x0 + width / 2}" y="${height - 8}" text-anchor="middle" font-size="11">drones (and as many browsers)</text>`,
    );
    if (panel.baseline > 0) {
      parts.push(
        `<line x1="${x0 + pad.left}" y1="${yOf(panel.baseline)}" x2="${x0 + width - pad.right}" y2="${yOf(panel.baseline)}" stroke="#888" stroke-dasharray="5,4"/>`,
      );
    }
    processCounts.forEach((processes, index) => {
      const line = shown
        .filter((point) => point.processes === processes)
        .sort((a, b) => a.drones - b.drones)
        .map((point) => `${xOf(point.drones)},${yOf(panel.value(point))}`);
      const colour = colours[index % colours.length];
      parts.push(
        `<polyline points="${line.join(" ")}" fill="none" stroke="${colour}" stroke-width="2"/>`,
        ...line.map((xy) => {
          const [x, y] = xy.split(",");
          return `<circle cx="${x}" cy="${y}" r="3" fill="${colour}"/>`;
        }),
      );
      if (panelIndex === 0)
        parts.push(
          `<text x="${x0 + pad.left + 10}" y="${pad.top + 14 + index * 14}" font-size="11" fill="${colour}">${processes} process${processes > 1 ? "es" : ""}</text>`,
        );
    });
  });
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width * panels.length}" height="${height}" font-family="sans-serif"><rect width="100%" height="100%" fill="white"/>${parts.join("")}</svg>`;
  const directory = await mkdtemp(path.join(tmpdir(), "gadget-plot-"));
  try {
    const page = path.join(directory, "curve.html");
    await writeFile(page, `<html><body style="margin:0">${svg}</body></html>`);
    await new Promise<void>((resolve, reject) => {
      const chromium = spawn(
        process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
        [
          "--headless",
          "--no-sandbox",
          "--disable-gpu",
          `--user-data-dir=${path.join(directory, "profile")}`,
          `--screenshot=${path.resolve(file)}`,
          `--window-size=${width * panels.length},${height}`,
          `file://${page}`,
        ],
        { stdio: "ignore" },
      );
      chromium.once("error", reject);
      chromium.once("exit", (code) =>
        code === 0 ? resolve() : reject(new Error(`chromium exited ${code}`)),
      );
    });
    console.error(`curve: plot written to ${file}`);
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}
