// What the server benchmarks share: their table, the services they run on, a server process
// with its database, seeded drones, and the CPU time of the processes a relay run watches.
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { type Database, openDatabase } from "@gadget/db";
import { databaseUrl } from "@gadget/services";
import type { ApiClient } from "@gadget/testkit/wire";
import { Types } from "mongoose";
import { sha256 } from "../src/crypto/tokens.ts";
import { type ServerProcess, startServerProcess } from "../src/testing/server-process.ts";

export interface Row {
  benchmark: string;
  measure: string;
  gadget: string;
  baseline: string;
  target: string;
}

export const rows: Row[] = [];

export interface Env {
  mongoUrl: string;
  redisUrl: string;
}

/**
 * Processes whose CPU time a relay run reports (server, database, redis), by pid. CPU per event
 * barely moves with the machine's noise, unlike a p99, so it shows what a change costs.
 */
export const watchedProcesses = new Map<string, number>();

/** CPU time (ms) a process has used so far, from /proc (USER_HZ is 100); null elsewhere. */
export function cpuMs(pid: number): number | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return null;
  }
}

export function cpuNow(): Map<string, number> {
  const used = new Map<string, number>();
  for (const [name, pid] of watchedProcesses) {
    const ms = cpuMs(pid);
    if (ms !== null) used.set(name, ms);
  }
  return used;
}

export async function startServer(
  env: Env,
  name: string,
  /** More of the server's environment, e.g. GADGET_ALLOW_PRIVATE_NETWORK. */
  extra: Record<string, string> = {},
  options: {
    /** Another checkout's apps/server to run (a build before a change); default this one. */
    serverDirectory?: string;
    /** More node flags for the server process. */
    nodeArgs?: string[];
    /** The database and Redis prefix's name, when several processes share them; default `name`. */
    shared?: string;
  } = {},
): Promise<{ server: ServerProcess; database: Database; url: string }> {
  const mongo = databaseUrl(env.mongoUrl, `bench_${options.shared ?? name}`);
  const server = await startServerProcess(
    {
      MONGO_URL: mongo,
      REDIS_URL: env.redisUrl,
      GADGET_REDIS_PREFIX: `bench_${options.shared ?? name}`,
      LOG_LEVEL: "warn",
      ...extra,
    },
    60_000,
    // BENCH_PROFILE=<dir> writes a CPU profile of the server process there.
    [
      ...(process.env.BENCH_PROFILE
        ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_PROFILE}`]
        : []),
      // BENCH_NODE_ARGS="--log-deopt --logfile=…": more node flags for the server.
      ...(process.env.BENCH_NODE_ARGS ? process.env.BENCH_NODE_ARGS.split(" ") : []),
      ...(options.nodeArgs ?? []),
    ],
    options.serverDirectory,
  );
  const database = await openDatabase(mongo, { ensureIndexes: false });
  return { server, database, url: server.url };
}

/** Seeds `count` drones for `userId` straight into the database; returns their credentials. */
export async function seedDrones(
  database: Database,
  userId: string,
  count: number,
  prefix: string,
) {
  const drones = Array.from({ length: count }, (_, index) => ({
    _id: new Types.ObjectId(),
    credential: `gdc_bench_${prefix}_${index}_${randomUUID()}`,
  }));
  await database.models.Drone.insertMany(
    drones.map((drone, index) => ({
      _id: drone._id,
      user: new Types.ObjectId(userId),
      name: `${prefix}-${index}`,
      credentialHash: sha256(drone.credential),
      capacity: 8,
      registrationToken: new Types.ObjectId(),
    })),
  );
  return drones.map((drone) => ({ droneId: String(drone._id), credential: drone.credential }));
}

/** The user's online drones, every page of `GET /api/drones` (a page holds at most 500). */
export async function countOnlineDrones(client: ApiClient): Promise<number> {
  let online = 0;
  let cursor: string | null = null;
  do {
    const listed = await client.get(`/api/drones?limit=500${cursor ? `&cursor=${cursor}` : ""}`);
    if (listed.status !== 200) throw new Error(`GET /api/drones: ${listed.status}`);
    const drones = listed.body.drones as Array<{ status: string }>;
    online += drones.filter((drone) => drone.status === "online").length;
    cursor = listed.body.nextCursor as string | null;
  } while (cursor);
  return online;
}
