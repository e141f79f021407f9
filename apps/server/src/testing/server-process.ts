// Runs `gadget-code serve` as a separate OS process (tests of several servers, benchmarks).
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "@gadget/services";

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
