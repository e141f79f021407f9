// The cost curve's idle fleet over child processes (curve-fleet-child.ts): a process may hold at
// most 20,000 open files here (`ulimit -Hn`, not to be raised), so 10,000 drones + 10,000
// browsers cannot be opened from the benchmark's own process. Each child holds at most
// `socketsPerProcess` sockets; the measured clients stay in the benchmark's process. Also the
// peak memory and CPU time of the processes a point runs on, from /proc.
import { type ChildProcess, fork } from "node:child_process";
import { readdir } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { rssMb } from "@gadget/testkit/measure";
import type { FleetPart, FleetReport } from "./curve-fleet-child.ts";
import { cpuMs } from "./harness.ts";

const here = path.dirname(fileURLToPath(import.meta.url));
/** A quarter of the open-files limit: room for the child's own files and some slack. */
const socketsPerProcess = 5_000;
/** Handshakes in flight at once over the whole fleet, as the one-process bench had. */
const concurrency = 50;

export interface Fleet {
  pids: number[];
  /** The slowest child's seconds to connect its drones, then its browsers. */
  droneSeconds: number;
  browserSeconds: number;
  /** Handshakes tried again after a timeout. */
  retries: number;
  /** The first socket dropped after connecting, if any: the point's figures are then not its size's. */
  dropped: () => string | null;
  close(): Promise<void>;
}

/** Forks as many children as `part` needs and connects them all; rejects at the first refusal. */
export async function startFleet(part: Omit<FleetPart, "concurrency">): Promise<Fleet> {
  const count = Math.max(
    1,
    Math.ceil((part.drones.length + part.browsers.length) / socketsPerProcess),
  );
  const children: ChildProcess[] = [];
  let dropped: string | null = null;
  const close = async () => {
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once("exit", () => resolve());
            if (child.connected) child.send({ kind: "close" });
            else child.kill();
          }),
      ),
    );
  };
  try {
    const reports = await Promise.all(
      Array.from({ length: count }, (_, index) => {
        const child = fork(path.join(here, "curve-fleet-child.ts"), [], {
          execArgv: ["--import", "tsx"],
          stdio: ["ignore", "inherit", "inherit", "ipc"],
        });
        children.push(child);
        const share: FleetPart = {
          drones: part.drones.filter((_, item) => item % count === index),
          browsers: part.browsers.filter((_, item) => item % count === index),
          heartbeatMs: part.heartbeatMs,
          concurrency: Math.ceil(concurrency / count),
        };
        child.send({ kind: "connect", part: share });
        return new Promise<FleetReport & { kind: "connected" }>((resolve, reject) => {
          const of = `fleet process ${index + 1} of ${count}`;
          const total = share.drones.length + share.browsers.length;
          child.on("message", (report: FleetReport) => {
            if (report.kind === "connected") return resolve(report);
            if (report.kind === "dropped") {
              dropped ??= `${of} lost a socket (${report.reason}) with ${report.connected} of ${total} connected`;
              return reject(new Error(dropped));
            }
            reject(
              new Error(
                `${of} stopped after ${report.connected} of ${total} sockets: ${report.message}`,
              ),
            );
          });
          child.once("exit", (code) =>
            reject(new Error(`fleet process ${index + 1} of ${count} exited (${code})`)),
          );
        });
      }),
    );
    return {
      pids: children.map((child) => child.pid!),
      droneSeconds: Math.max(...reports.map((report) => report.droneSeconds)),
      browserSeconds: Math.max(...reports.map((report) => report.browserSeconds)),
      retries: reports.reduce((sum, report) => sum + report.retries, 0),
      dropped: () => dropped,
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/** Open files of a process (its sockets among them), from /proc; null when it is gone. */
export async function openFiles(pid: number): Promise<number | null> {
  return readdir(`/proc/${pid}/fd`).then(
    (entries) => entries.length,
    () => null,
  );
}

/** CPU seconds used so far by each group of processes (a process gone counts nothing). */
export function cpuSeconds(groups: Record<string, number[]>): Record<string, number> {
  const used: Record<string, number> = {};
  for (const [name, pids] of Object.entries(groups))
    used[name] = pids.reduce((sum, pid) => sum + (cpuMs(pid) ?? 0), 0) / 1000;
  return used;
}

/**
 * The peak summed RSS (MiB) of each group of processes, sampled every two seconds until `stop`.
 * `groups` is asked again at each sample: the fleet's children come and go.
 */
export function watchPeakRss(groups: () => Record<string, number[]>) {
  const peak: Record<string, number> = {};
  const sample = async () => {
    for (const [name, pids] of Object.entries(groups())) {
      let total = 0;
      for (const pid of pids) total += await rssMb(pid).catch(() => 0);
      peak[name] = Math.max(peak[name] ?? 0, total);
    }
  };
  const timer = setInterval(() => void sample(), 2_000);
  return {
    async stop(): Promise<Record<string, number>> {
      clearInterval(timer);
      await sample();
      return Object.fromEntries(Object.entries(peak).map(([name, mb]) => [name, Math.round(mb)]));
    },
  };
}
