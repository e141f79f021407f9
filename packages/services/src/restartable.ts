// A private Redis or MongoDB-compatible server that a fault test can kill and bring back on the
// same port (and, for the database, the same data): what an outage looks like to its clients.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, openSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import path from "node:path";
import { ensureFerretdb } from "./ferretdb.ts";
import { startReaper } from "./reaper.ts";
import { redisServerArgs } from "./redis-args.ts";
import { which } from "./which.ts";
import { pingMongo, pingRedis, stablePort, waitUntil } from "./wire.ts";

export interface RestartableService {
  url: string;
  /** Ends the server at once (SIGKILL by default): clients see connections refused. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again on the same port (the database on the same data; Redis empty). */
  start(): Promise<void>;
  /** Kills it for good. */
  stop(): Promise<void>;
  /** Whether it runs now. */
  readonly running: boolean;
}

/** Whether process `pid` holds the socket listening on 127.0.0.1:`port` (Linux's /proc). */
function listensOn(pid: number, port: number): boolean {
  const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, "0")}`;
  let table: string;
  try {
    table = readFileSync("/proc/net/tcp", "utf8");
  } catch {
    return true; // no /proc: nothing to check against
  }
  const inodes = new Set<string>();
  for (const line of table.split("\n").slice(1)) {
    const fields = line.trim().split(/\s+/);
    // local_address, state 0A (LISTEN), inode
    if (fields[1] === local && fields[3] === "0A" && fields[9]) inodes.add(`socket:[${fields[9]}]`);
  }
  try {
    return readdirSync(`/proc/${pid}/fd`).some((fd) => {
      try {
        return inodes.has(readlinkSync(`/proc/${pid}/fd/${fd}`));
      } catch {
        return false;
      }
    });
  } catch {
    return false;
  }
}

function launcher(
  command: string,
  args: string[],
  logFile: string,
  ping: () => Promise<void>,
  url: string,
): RestartableService {
  let child: ChildProcess | null = null;
  const start = async () => {
    const output = openSync(logFile, "a");
    const started = spawn(command, args, { stdio: ["ignore", output, output], detached: true });
    child = started;
    started.on("error", () => {});
    // Not through kill(): something else ended it (a crash, or a signal from outside), which
    // the test that meets the outage cannot tell from its own; said where the run's log keeps it.
    started.once("exit", (code, signal) => {
      if (child !== started) return;
      child = null;
      process.stderr.write(
        `${url}: ${path.basename(command)} (pid ${started.pid}) ended by itself (${signal ?? `exit ${code}`}):\n${readFileSync(logFile, "utf8").slice(-1_000)}\n`,
      );
    });
    if (started.pid) startReaper([started.pid]);
    const port = Number(new URL(url).port);
    await waitUntil(url, ping, 30_000);
    // What answered must be this process: had it failed to bind, another one holds the port.
    if (started.exitCode !== null || !listensOn(started.pid ?? 0, port)) {
      child = null;
      started.kill("SIGKILL");
      const log = readFileSync(logFile, "utf8").slice(-2_000);
      throw new Error(
        `${url} answers, but not the ${path.basename(command)} started here:\n${log}`,
      );
    }
  };
  const kill = async (signal: NodeJS.Signals = "SIGKILL") => {
    const current = child;
    child = null;
    if (!current || current.exitCode !== null || current.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      current.once("exit", () => resolve());
      current.kill(signal);
    });
  };
  return {
    url,
    kill,
    start,
    stop: () => kill("SIGKILL"),
    get running() {
      return child !== null;
    },
  };
}

/**
 * A private redis-server without persistence: after `kill` and `start` it is empty, as a Redis
 * restarted without AOF would be.
 * @example const redis = await startRestartableRedis(dataDir); await redis.kill(); await redis.start();
 */
export async function startRestartableRedis(dataDir: string): Promise<RestartableService> {
  const redisServer = which("redis-server");
  if (!redisServer) throw new Error("redis-server is not on PATH");
  const port = await stablePort();
  mkdirSync(dataDir, { recursive: true });
  const url = `redis://127.0.0.1:${port}`;
  const service = launcher(
    redisServer,
    redisServerArgs(port, dataDir),
    path.join(dataDir, "redis.log"),
    () => pingRedis(url),
    url,
  );
  await service.start();
  return service;
}

/**
 * A private MongoDB-compatible server (mongod, else FerretDB) on its own data directory; after
 * `kill` and `start` it has the data it had.
 */
export async function startRestartableMongo(
  rootDir: string,
  dataDir: string,
): Promise<RestartableService> {
  const port = await stablePort();
  mkdirSync(dataDir, { recursive: true });
  const url = `mongodb://127.0.0.1:${port}`;
  const mongod = which("mongod");
  const ferretdb = mongod ? null : await ensureFerretdb(rootDir, () => {});
  if (!mongod && !ferretdb)
    throw new Error("neither mongod nor Go (to build FerretDB) is available");
  const [command, args] = mongod
    ? [mongod, ["--port", String(port), "--bind_ip", "127.0.0.1", "--dbpath", dataDir, "--quiet"]]
    : [ferretdb as string, ["-listen", `127.0.0.1:${port}`, "-data", dataDir]];
  const service = launcher(
    command,
    args,
    path.join(dataDir, "server.log"),
    () => pingMongo(url),
    url,
  );
  await service.start();
  return service;
}
