// `bench/run.ts dispatch --explain`: what one dispatch sends to MongoDB and Redis, by command,
// from the server's command log (command-log.ts) cut at the bench's own marks (the POST, the
// work order's arrival). Prints the mean count and time of each command before the order reached
// the drone, in a quiet while after it, and in as long again after that (the idle fleet's
// heartbeats, which the other two windows hold too), and the timeline of the last dispatch.
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import type { LoggedCommand } from "./command-log.ts";

/** One dispatch's marks (epoch ms): the POST sent, the order at the drone. */
export interface ExplainedSample {
  start: number;
  arrived: number;
}

/** What the store floor sends, for the comparison (bench/dispatch.ts `storeFloor`). */
const floorCommands = [
  "find api_tokens ‖ find chat_sessions ‖ find providers",
  "insert chat_turns ‖ insert turn_events",
  "insert turn_events ‖ update chat_turns",
];

export async function readCommandLog(directory: string): Promise<LoggedCommand[]> {
  const entries: LoggedCommand[] = [];
  for (const name of await readdir(directory)) {
    if (!name.endsWith(".jsonl")) continue;
    for (const line of (await readFile(path.join(directory, name), "utf8")).split("\n")) {
      if (line) entries.push(JSON.parse(line) as LoggedCommand);
    }
  }
  return entries.sort((a, b) => a.at - b.at);
}

export function explainDispatch(
  title: string,
  log: readonly LoggedCommand[],
  samples: readonly ExplainedSample[],
  /** The quiet after each order: the first `tailMs` are its tail, the next `tailMs` idle. */
  tailMs: number,
): void {
  const before = new Map<string, { count: number; ms: number }>();
  const after = new Map<string, { count: number; ms: number }>();
  const idle = new Map<string, { count: number; ms: number }>();
  const add = (into: typeof before, entry: LoggedCommand) => {
    const known = into.get(entry.name) ?? { count: 0, ms: 0 };
    known.count++;
    known.ms += entry.ms;
    into.set(entry.name, known);
  };
  for (const sample of samples) {
    for (const entry of log) {
      if (entry.at < sample.start || entry.at >= sample.arrived + 2 * tailMs) continue;
      if (entry.at < sample.arrived) add(before, entry);
      else add(entry.at < sample.arrived + tailMs ? after : idle, entry);
    }
  }
  const count = samples.length;
  const total = (of: typeof before, kind: string) =>
    [...of]
      .filter(([name]) => name.startsWith(kind))
      .reduce((sum, [, entry]) => sum + entry.count, 0) / count;
  const print = (heading: string, of: typeof before) => {
    console.log(
      `\n${heading}: ${total(of, "mongo").toFixed(1)} MongoDB and ${total(of, "redis").toFixed(1)} Redis commands per dispatch`,
    );
    for (const [name, entry] of [...of].sort((a, b) => a[0].localeCompare(b[0]))) {
      console.log(
        `  ${name.padEnd(48)} ${(entry.count / count).toFixed(2).padStart(5)} × ${(entry.ms / entry.count).toFixed(2).padStart(6)} ms`,
      );
    }
  };
  console.log(`\n## ${title}: the commands of one dispatch (mean of ${count})`);
  console.log(`the store floor sends 7 MongoDB commands in 3 rounds: ${floorCommands.join(" → ")}`);
  print("POST → work order at the drone", before);
  print(`in the ${tailMs} ms after the work order`, after);
  print(`in the next ${tailMs} ms (the idle fleet: heartbeats of 100 drones)`, idle);
  const last = samples[samples.length - 1];
  if (!last) return;
  console.log(
    `\ntimeline of the last dispatch (work order at the drone after ${(last.arrived - last.start).toFixed(1)} ms):`,
  );
  for (const entry of log) {
    if (entry.at < last.start || entry.at >= last.arrived + tailMs) continue;
    const from = entry.at - last.start;
    const mark = entry.at >= last.arrived ? "  (after)" : "";
    console.log(
      `${from.toFixed(1).padStart(7)} → ${(from + entry.ms).toFixed(1).padStart(7)}  ${entry.name}${mark}`,
    );
  }
}
