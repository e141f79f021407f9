// Redraws the cost curve's plot from a run's log, without measuring again:
// `tsx bench/curve-plot.ts <log> <file.png> [more logs…]` reads the `curve point: {…}` lines of
// every log (points of runs of their own, e.g. the 10,000-drone ones, beside the default run's)
// and the baselines of the first: its final `{"floor50":…}` or `curve baselines: {…}` line (or
// BENCH_CURVE_FLOOR / BENCH_CURVE_BARE_KB when the run stopped first).
import { readFile } from "node:fs/promises";
import type { CurvePoint } from "./curve.ts";
import { plot } from "./curve-report.ts";

const [log, file, ...more] = process.argv.slice(2);
if (!log || !file) throw new Error("usage: tsx bench/curve-plot.ts <log> <file.png> [more logs…]");
const logs = await Promise.all([log, ...more].map((name) => readFile(name, "utf8")));
const points: CurvePoint[] = logs
  .flatMap((text) => text.split("\n"))
  .filter((line) => line.startsWith("curve point: "))
  .map((line) => JSON.parse(line.slice("curve point: ".length)));
const lines = logs[0]!.split("\n");
const summary =
  lines.find((line) => line.startsWith('{"floor50":')) ??
  lines.find((line) => line.startsWith("curve baselines: "))?.slice("curve baselines: ".length);
const baselines = summary ? JSON.parse(summary) : {};
await plot(
  points,
  baselines.floor50 ?? Number(process.env.BENCH_CURVE_FLOOR ?? 0),
  baselines.bareKb ?? Number(process.env.BENCH_CURVE_BARE_KB ?? 0),
  file,
);
