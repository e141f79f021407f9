// Private Redis Clusters and Sentinel setups on loopback for failover tests: real redis-server
// processes on free ports, a master of which a test kills (SIGKILL, no CLUSTER FAILOVER) to watch
// its replica take over. Each process leads its own group and is reaped if the test process dies.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdirSync, openSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { startReaper } from "./reaper.ts";
import { redisServerArgs } from "./redis-args.ts";
import { which } from "./which.ts";
import { pingRedis, stablePort, waitUntil } from "./wire.ts";

const run = promisify(execFile);

/** One redis-server (or Sentinel) node. */
export interface RedisProcess {
  port: number;
  /** Ends it at once (SIGKILL): its clients see connections refused. */
  kill(): Promise<void>;
  /** Stops it (SIGSTOP): its connections stay open and answer nothing, as a hung host's would. */
  pause(): void;
  /** Lets a paused node go on (SIGCONT). */
  resume(): void;
  readonly running: boolean;
}

export interface RedisTopology {
  /** The REDIS_URL the server is given. */
  url: string;
  /** Every node, masters and replicas (and Sentinels) alike. */
  processes: RedisProcess[];
  /** Kills every node. */
  stop(): Promise<void>;
}

export interface RedisCluster extends RedisTopology {
  /** The port of the master that serves the slot of `key` now. */
  masterOf(key: string): Promise<number>;
  /** Resolves once `key`'s slot is served by a master other than `formerPort`, every slot covered. */
  failedOver(key: string, formerPort: number, timeoutMs?: number): Promise<number>;
  /** The ports of the replicas of the master on `masterPort`. */
  replicasOf(masterPort: number): Promise<number[]>;
  /** `cluster_state` as the node on `port` sees it: `ok`, or `fail` while a slot has no master. */
  stateSeenBy(port: number): Promise<string>;
}

export interface RedisSentinelSetup extends RedisTopology {
  masterName: string;
  /** The port the Sentinels name as the master now. */
  masterPort(): Promise<number>;
  /** Resolves once the Sentinels name a master other than `formerPort`. */
  failedOver(formerPort: number, timeoutMs?: number): Promise<number>;
}

function redisBinaries(): { server: string; cli: string } {
  const server = which("redis-server");
  const cli = which("redis-cli");
  if (!server || !cli) throw new Error("redis-server and redis-cli must be on PATH");
  return { server, cli };
}

function startProcess(command: string, args: string[], logFile: string, port: number) {
  const output = openSync(logFile, "a");
  const child: ChildProcess = spawn(command, args, {
    stdio: ["ignore", output, output],
    detached: true,
  });
  child.on("error", () => {});
  if (child.pid) startReaper([child.pid]);
  let killing = false;
  const exited = new Promise<void>((resolve) =>
    child.once("exit", (code, signal) => {
      // Not through kill(): said on stderr with its log, as a restartable server's is.
      if (!killing) {
        process.stderr.write(
          `redis-server on port ${port} (pid ${child.pid}) ended by itself (${signal ?? `exit ${code}`}):\n${readFileSync(logFile, "utf8").slice(-1_000)}\n`,
        );
      }
      resolve();
    }),
  );
  const node: RedisProcess = {
    port,
    get running() {
      return child.exitCode === null && child.signalCode === null;
    },
    kill: async () => {
      if (!node.running) return;
      killing = true;
      child.kill("SIGKILL");
      await exited;
    },
    pause: () => {
      child.kill("SIGSTOP");
    },
    resume: () => {
      child.kill("SIGCONT");
    },
  };
  return node;
}

async function cli(cliPath: string, port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run(cliPath, ["-h", "127.0.0.1", "-p", String(port), ...args], {
    timeout: 10_000,
  });
  return stdout;
}

/** Waits for `check` to say yes, polling every 200 ms. */
async function until(what: string, check: () => Promise<boolean>, timeoutMs: number) {
  await waitUntil(
    what,
    async () => {
      if (!(await check().catch(() => false))) throw new Error(`not yet: ${what}`);
    },
    timeoutMs,
  );
}

/**
 * Starts a Redis Cluster of `masters` masters with one replica each (redis-cli --cluster create),
 * every node on loopback with its data under `directory`, and waits until every slot is served
 * and every replica is in sync. A master found dead for 1 s is replaced by its replica.
 * @example const cluster = await startRedisCluster(dir); node.env.REDIS_URL = cluster.url;
 */
export async function startRedisCluster(directory: string, masters = 3): Promise<RedisCluster> {
  const binaries = redisBinaries();
  const count = masters * 2;
  const ports = await distinctFreePorts(count * 2);
  const processes = Array.from({ length: count }, (_, index) => {
    const port = ports[index]!;
    const dataDir = path.join(directory, `node-${port}`);
    mkdirSync(dataDir, { recursive: true });
    // The bus port is given, not port + 10000 (which may be taken or out of range).
    const args = [
      ...redisServerArgs(port, dataDir),
      "--cluster-port",
      String(ports[count + index]),
      "--cluster-enabled",
      "yes",
      "--cluster-config-file",
      "nodes.conf",
      "--cluster-node-timeout",
      "1000",
      // A replica takes over whatever its link's age: the test's kill must end in a promotion.
      "--cluster-replica-validity-factor",
      "0",
    ];
    return startProcess(binaries.server, args, path.join(dataDir, "redis.log"), port);
  });
  const stop = async () => {
    await Promise.all(processes.map((node) => node.kill()));
  };
  /** `cluster_state` as the node on `port` sees it. */
  const stateSeenBy = async (port: number) =>
    /cluster_state:(\w+)/.exec(await cli(binaries.cli, port, "cluster", "info"))?.[1] ?? "";
  try {
    await Promise.all(
      processes.map((node) =>
        waitUntil(`redis ${node.port}`, () => pingRedis(redisUrlOf(node.port)), 30_000),
      ),
    );
    await run(
      binaries.cli,
      [
        "--cluster",
        "create",
        ...processes.map((node) => `127.0.0.1:${node.port}`),
        "--cluster-replicas",
        "1",
        "--cluster-yes",
      ],
      { timeout: 60_000 },
    );
    await until(
      "every node to see the cluster ok and every replica in sync",
      async () => {
        for (const node of processes) {
          if ((await stateSeenBy(node.port)) !== "ok") return false;
          const replication = await cli(binaries.cli, node.port, "info", "replication");
          if (replication.includes("role:slave") && !replication.includes("master_link_status:up"))
            return false;
        }
        return true;
      },
      60_000,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  const alive = () => processes.filter((node) => node.running);
  const portOf = (address: string) => Number(address.split(":")[1]!.split("@")[0]);
  const masterOf = async (key: string) => {
    const [first] = alive();
    const slot = Number((await cli(binaries.cli, first!.port, "cluster", "keyslot", key)).trim());
    const nodes = await cli(binaries.cli, first!.port, "cluster", "nodes");
    for (const line of nodes.trim().split("\n")) {
      const [, address = "", flags = "", , , , , state, ...ranges] = line.split(" ");
      if (!flags.includes("master") || flags.includes("fail") || state !== "connected") continue;
      const serves = ranges.some((range) => {
        const [low, high = low] = range.split("-").map(Number);
        return slot >= low! && slot <= high!;
      });
      if (serves) return portOf(address);
    }
    throw new Error(`no master serves the slot of ${key}`);
  };
  return {
    url: `redis://${processes.map((node) => `127.0.0.1:${node.port}`).join(",")}`,
    processes,
    stop,
    masterOf,
    replicasOf: async (masterPort) => {
      const lines = (await cli(binaries.cli, masterPort, "cluster", "nodes")).trim().split("\n");
      const master = lines.find((line) => line.includes("myself"))!.split(" ")[0];
      return lines
        .map((line) => line.split(" "))
        .filter(([, , flags = "", masterId]) => flags.includes("slave") && masterId === master)
        .map(([, address = ""]) => portOf(address));
    },
    stateSeenBy,
    failedOver: async (key, formerPort, timeoutMs = 60_000) => {
      let port = formerPort;
      await until(
        `the slot of ${key} to move off ${formerPort}`,
        async () => {
          for (const node of alive()) {
            if ((await stateSeenBy(node.port)) !== "ok") return false;
          }
          port = await masterOf(key);
          return port !== formerPort;
        },
        timeoutMs,
      );
      return port;
    },
  };
}

/**
 * Starts a master, one replica of it and three Sentinels watching it as `masterName` (quorum 2,
 * down after 1 s), all on loopback under `directory`; waits until each Sentinel knows the replica
 * and the other Sentinels, so a killed master is failed over.
 * @example const setup = await startRedisSentinel(dir); node.env.REDIS_URL = setup.url;
 */
export async function startRedisSentinel(
  directory: string,
  masterName = "gadget",
): Promise<RedisSentinelSetup> {
  const binaries = redisBinaries();
  const [masterPort, replicaPort, ...sentinelPorts] = await distinctFreePorts(5);
  const data = (name: string) => {
    const dataDir = path.join(directory, name);
    mkdirSync(dataDir, { recursive: true });
    return dataDir;
  };
  const masterDir = data("master");
  const replicaDir = data("replica");
  const processes = [
    startProcess(
      binaries.server,
      redisServerArgs(masterPort!, masterDir),
      path.join(masterDir, "redis.log"),
      masterPort!,
    ),
    startProcess(
      binaries.server,
      [
        ...redisServerArgs(replicaPort!, replicaDir),
        "--replicaof",
        "127.0.0.1",
        String(masterPort),
      ],
      path.join(replicaDir, "redis.log"),
      replicaPort!,
    ),
  ];
  for (const port of sentinelPorts) {
    const dataDir = data(`sentinel-${port}`);
    const config = path.join(dataDir, "sentinel.conf");
    // Sentinel rewrites its config file as it learns: it must be its own and writable.
    writeFileSync(
      config,
      [
        `port ${port}`,
        "bind 127.0.0.1",
        `dir ${dataDir}`,
        `sentinel monitor ${masterName} 127.0.0.1 ${masterPort} 2`,
        `sentinel down-after-milliseconds ${masterName} 1000`,
        `sentinel failover-timeout ${masterName} 10000`,
        `sentinel parallel-syncs ${masterName} 1`,
        "",
      ].join("\n"),
    );
    processes.push(
      startProcess(
        binaries.server,
        [config, "--sentinel"],
        path.join(dataDir, "sentinel.log"),
        port!,
      ),
    );
  }
  const stop = async () => {
    await Promise.all(processes.map((node) => node.kill()));
  };
  const sentinels = processes.slice(2);
  const masterAddress = async () => {
    for (const sentinel of sentinels.filter((node) => node.running)) {
      const answer = await cli(
        binaries.cli,
        sentinel.port,
        "sentinel",
        "get-master-addr-by-name",
        masterName,
      ).catch(() => "");
      const port = Number(answer.trim().split("\n")[1]);
      if (port) return port;
    }
    throw new Error("no Sentinel answers");
  };
  try {
    await until(
      "the replica in sync and every Sentinel to know it and the others",
      async () => {
        const replication = await cli(binaries.cli, replicaPort!, "info", "replication");
        if (!replication.includes("master_link_status:up")) return false;
        for (const sentinel of sentinels) {
          const replicas = await cli(
            binaries.cli,
            sentinel.port,
            "sentinel",
            "replicas",
            masterName,
          );
          if (!replicas.includes(String(replicaPort))) return false;
          const others = await cli(
            binaries.cli,
            sentinel.port,
            "sentinel",
            "sentinels",
            masterName,
          );
          if (sentinelPorts.filter((port) => others.includes(String(port))).length < 2)
            return false;
        }
        return true;
      },
      60_000,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    url: `redis+sentinel://${sentinelPorts.map((port) => `127.0.0.1:${port}`).join(",")}/${masterName}`,
    masterName,
    processes,
    stop,
    masterPort: masterAddress,
    failedOver: async (formerPort, timeoutMs = 60_000) => {
      let port = formerPort;
      await until(
        `the Sentinels to promote a master other than ${formerPort}`,
        async () => {
          port = await masterAddress();
          if (port === formerPort) return false;
          const replication = await cli(binaries.cli, port, "info", "replication");
          return replication.includes("role:master");
        },
        timeoutMs,
      );
      return port;
    },
  };
}

function redisUrlOf(port: number): string {
  return `redis://127.0.0.1:${port}`;
}

/** `count` free loopback ports, no two alike. */
async function distinctFreePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await stablePort());
  return [...ports];
}
