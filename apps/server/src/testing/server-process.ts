// Runs `gadget-code serve` as a separate OS process (tests of several servers, benchmarks).
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { openDatabase } from "@gadget/db";
import { databaseUrl, freePort } from "@gadget/services";

const serverDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  /** Everything the process printed so far. */
  output(): string;
  /** Sends `signal` and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts a server process with the given environment (MONGO_URL, REDIS_URL, GADGET_REDIS_PREFIX, …).
 * @example const a = await startServerProcess({ MONGO_URL, REDIS_URL, GADGET_REDIS_PREFIX: "t1" });
 */
export async function startServerProcess(
  env: Record<string, string>,
  timeoutMs = 30_000,
  /** Extra node flags, e.g. `--cpu-prof`. */
  nodeArgs: string[] = [],
  /**
   * The apps/server directory whose `src/cli.ts serve` runs; default this one. A benchmark points
   * it at a git worktree of an older commit to measure that build beside this one.
   */
  serverDirectory: string = serverDir,
): Promise<ServerProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, [...nodeArgs, "--import", "tsx", "src/cli.ts", "serve"], {
    cwd: serverDirectory,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      NODE_ENV: "test",
      HOST: "127.0.0.1",
      PORT: String(port),
      LOG_LEVEL: "warn",
      GADGET_SECRET: "test-secret-test-secret-test-secret-0123",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const exited = new Promise<number | null>((resolve) =>
    child.once("exit", (code) => resolve(code)),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`server did not start:\n${output}`)),
      timeoutMs,
    );
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /"listening":"([^"]+)"/.exec(output);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code}) before listening:\n${output}`));
    });
  });
  return {
    url,
    child,
    output: () => output,
    stop: async (signal = "SIGTERM") => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const killer = setTimeout(() => child.kill("SIGKILL"), 15_000);
      const code = await exited;
      clearTimeout(killer);
      return code;
    },
  };
}

/** Two server processes sharing one database and Redis prefix, as an operator runs several. */
export interface ServerPair {
  first: ServerProcess;
  second: ServerProcess;
  /** Stops both and drops their database. */
  stop(): Promise<void>;
}

/**
 * Starts two `gadget-code serve` processes on database `test_<name>` of `mongoUrl` and Redis
 * prefix `t_<name>`, with `env` added.
 * @example const { first, second, stop } = await startServerPair({ mongoUrl, redisUrl, name });
 */
export async function startServerPair(options: {
  mongoUrl: string;
  redisUrl: string;
  name: string;
  env?: Record<string, string>;
  /** How long each may take to start; default 30 s. */
  startTimeoutMs?: number;
}): Promise<ServerPair> {
  const mongoUrl = databaseUrl(options.mongoUrl, `test_${options.name}`);
  const env = {
    MONGO_URL: mongoUrl,
    REDIS_URL: options.redisUrl,
    GADGET_REDIS_PREFIX: `t_${options.name}`,
    ...options.env,
  };
  const [first, second] = await Promise.all([
    startServerProcess(env, options.startTimeoutMs),
    startServerProcess(env, options.startTimeoutMs),
  ]);
  return {
    first,
    second,
    stop: async () => {
      await Promise.all([first.stop(), second.stop()]);
      const database = await openDatabase(mongoUrl, { ensureIndexes: false });
      await database.connection.dropDatabase();
      await database.close();
    },
  };
}
