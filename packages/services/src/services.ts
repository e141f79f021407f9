// Starts and stops private Redis and MongoDB-compatible servers, or uses the ones given.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, openSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";
import { MongoMemoryServer } from "mongodb-memory-server-core";
import { ensureFerretdb } from "./ferretdb.ts";
import { commandLineOf, startReaper } from "./reaper.ts";
import { redisServerArgs } from "./redis-args.ts";
import { which } from "./which.ts";
import { freePort, pingMongo, pingRedis, waitUntil } from "./wire.ts";

export type MongoKind = "external" | "mongod" | "ferretdb" | "mongodb-memory-server";
export type RedisKind = "external" | "redis-server";

export interface ServicesOptions {
  /** Repository root: where tools/ferretdb and the .gadget/bin build cache live. */
  rootDir: string;
  /** Directory for the servers' data and logs. */
  dataDir: string;
  /** Use this MongoDB instead of starting one. */
  mongoUrl?: string | undefined;
  /** Use this Redis instead of starting one. */
  redisUrl?: string | undefined;
  /** Keep Redis data on disk (AOF) between runs; default false. */
  persistent?: boolean;
  /**
   * Keep the servers running after this process exits (`pnpm services:up`). Default false:
   * a watchdog stops them when this process dies, even by SIGKILL.
   */
  detached?: boolean;
  /** How long to wait for each server to answer; default 60 s. */
  startTimeoutMs?: number;
  log?: (line: string) => void;
}

export interface RunningServices {
  mongoUrl: string;
  redisUrl: string;
  mongoKind: MongoKind;
  redisKind: RedisKind;
  /** PIDs of the processes this harness started. */
  pids: number[];
  /** Stops what this harness started (SIGTERM, then SIGKILL after 3 s). */
  stop(): Promise<void>;
}

interface Started {
  url: string;
  child?: ChildProcess;
  stop?: () => Promise<void>;
}

/**
 * Gives a MONGO_URL and a REDIS_URL, starting private servers on free ports for what was not given.
 * @example const services = await startServices({ rootDir, dataDir: await mkdtemp(...) });
 */
export async function startServices(options: ServicesOptions): Promise<RunningServices> {
  const log = options.log ?? (() => {});
  const timeoutMs = options.startTimeoutMs ?? 60_000;
  mkdirSync(options.dataDir, { recursive: true });
  const startedChildren: ChildProcess[] = [];
  const extraStops: Array<() => Promise<void>> = [];

  try {
    const [redis, mongo] = await Promise.all([
      options.redisUrl
        ? Promise.resolve<Started & { kind: RedisKind }>({
            url: options.redisUrl,
            kind: "external",
          })
        : startRedis(options, timeoutMs).then((started) => ({
            ...started,
            kind: "redis-server" as const,
          })),
      options.mongoUrl
        ? Promise.resolve<Started & { kind: MongoKind }>({
            url: options.mongoUrl,
            kind: "external",
          })
        : startMongo(options, log),
    ]);
    for (const started of [redis, mongo]) {
      if (started.child) startedChildren.push(started.child);
      if (started.stop) extraStops.push(started.stop);
    }
    await Promise.all([
      waitUntil(`Redis at ${redis.url}`, () => pingRedis(redis.url), timeoutMs),
      waitUntil(`MongoDB at ${mongo.url}`, () => pingMongo(mongo.url), timeoutMs),
    ]);
    const pids = startedChildren
      .map((child) => child.pid)
      .filter((pid): pid is number => pid !== undefined);
    for (const child of startedChildren) if (options.detached) child.unref();
    return {
      mongoUrl: mongo.url,
      redisUrl: redis.url,
      mongoKind: mongo.kind,
      redisKind: redis.kind,
      pids,
      stop: async () => {
        await Promise.all([...startedChildren.map(stopChild), ...extraStops.map((stop) => stop())]);
      },
    };
  } catch (error) {
    await Promise.all([...startedChildren.map(stopChild), ...extraStops.map((stop) => stop())]);
    throw error;
  }
}

/** Starts a server in its own process group; unless `detached`, it ends when this process ends. */
function spawnServer(
  command: string,
  args: string[],
  logFile: string,
  detached: boolean | undefined,
): ChildProcess {
  const output = openSync(logFile, "a");
  // Watched before it starts, by its command line, not once every server answers: a process
  // killed while its servers start (SIGKILL during `pnpm start`) leaves none behind.
  if (!detached) startReaper([], [commandLineOf(command, args)]);
  // Always its own process group: a terminal's Ctrl-C goes to the process that started it, which
  // stops the servers after what depends on them (`pnpm start` stops the server first).
  const child = spawn(command, args, { stdio: ["ignore", output, output], detached: true });
  // And by its pid: a server may rewrite its command line (redis-server shows its address).
  if (!detached && child.pid) startReaper([child.pid]);
  child.on("error", () => {
    // Reported by the readiness wait; an 'error' listener keeps it from crashing the process.
  });
  return child;
}

async function startRedis(options: ServicesOptions, timeoutMs: number): Promise<Started> {
  const redisServer = which("redis-server");
  if (!redisServer) {
    throw new Error(
      "redis-server is not on PATH: install it (Debian: apt-get install redis-server) or set REDIS_URL",
    );
  }
  const port = await freePort();
  const directory = path.join(options.dataDir, "redis");
  mkdirSync(directory, { recursive: true });
  const child = spawnServer(
    redisServer,
    [
      ...redisServerArgs(port, directory, { persistent: options.persistent }),
      // BullMQ requires that Redis never evicts its keys.
      "--maxmemory-policy",
      "noeviction",
      "--daemonize",
      "no",
    ],
    path.join(options.dataDir, "redis.log"),
    options.detached,
  );
  void timeoutMs;
  return { url: `redis://127.0.0.1:${port}`, child };
}

async function startMongo(
  options: ServicesOptions,
  log: (line: string) => void,
): Promise<Started & { kind: MongoKind }> {
  const port = await freePort();
  const mongod = which("mongod");
  if (mongod) {
    const directory = path.join(options.dataDir, "mongod");
    mkdirSync(directory, { recursive: true });
    const child = spawnServer(
      mongod,
      ["--port", String(port), "--bind_ip", "127.0.0.1", "--dbpath", directory, "--quiet"],
      path.join(options.dataDir, "mongod.log"),
      options.detached,
    );
    return { url: `mongodb://127.0.0.1:${port}`, child, kind: "mongod" };
  }

  const ferretdb = await ensureFerretdb(options.rootDir, log);
  if (ferretdb) {
    const directory = path.join(options.dataDir, "ferretdb");
    const child = spawnServer(
      ferretdb,
      ["-listen", `127.0.0.1:${port}`, "-data", directory],
      path.join(options.dataDir, "ferretdb.log"),
      options.detached,
    );
    return { url: `mongodb://127.0.0.1:${port}`, child, kind: "ferretdb" };
  }

  log(
    "No mongod on PATH and no Go to build FerretDB: starting MongoDB through mongodb-memory-server (the first start downloads a MongoDB binary, about 100 MB)",
  );
  return startMemoryMongo(port, {});
}

export interface MemoryMongoOptions {
  /** Where the downloaded MongoDB binary is kept; default ~/.cache/gadget-code/mongodb. */
  downloadDir?: string;
}

/**
 * MongoDB through mongodb-memory-server, for a machine with neither mongod nor Go: the binary is
 * downloaded once (from MongoDB's servers, or the mirror `MONGOMS_DOWNLOAD_MIRROR` names) and
 * kept. A download that fails says what else would work.
 */
export async function startMemoryMongo(
  port: number,
  options: MemoryMongoOptions,
): Promise<Started & { kind: MongoKind }> {
  const downloadDir =
    options.downloadDir ?? path.join(homedir(), ".cache", "gadget-code", "mongodb");
  let instance: MongoMemoryServer;
  try {
    instance = await MongoMemoryServer.create({
      instance: { port, ip: "127.0.0.1" },
      binary: { downloadDir },
    });
  } catch (error) {
    const reason = (error instanceof Error ? error.message : String(error))
      .replace(/\s+/g, " ")
      .trim();
    throw new Error(
      `Could not start MongoDB through mongodb-memory-server (${reason}). Without internet access to download its binary, set MONGO_URL to a MongoDB 6+, put mongod on PATH, or install Go so FerretDB can be built from tools/ferretdb.`,
      { cause: error },
    );
  }
  return {
    url: instance.getUri().replace(/\/$/, ""),
    kind: "mongodb-memory-server",
    stop: async () => {
      await instance.stop();
    },
  };
}

/** SIGTERM, then SIGKILL after 3 s; resolves when the process has exited. */
export function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const killTimer = setTimeout(() => child.kill("SIGKILL"), 3000);
    child.once("exit", () => {
      clearTimeout(killTimer);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

/** Stops processes by PID (for `services:down`, which did not start them itself). */
export async function stopPids(pids: number[]): Promise<void> {
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  for (const pid of pids) if (alive(pid)) process.kill(pid, "SIGTERM");
  const deadline = Date.now() + 3000;
  while (pids.some(alive) && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 50));
  for (const pid of pids) if (alive(pid)) process.kill(pid, "SIGKILL");
}

/** A MongoDB URL naming its own database, so tests and processes never share one by accident. */
export function databaseUrl(mongoUrl: string, database: string): string {
  const url = new URL(mongoUrl);
  url.pathname = `/${database}`;
  return url.toString();
}
