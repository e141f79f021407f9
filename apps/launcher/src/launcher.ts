// `pnpm start`, step by step: build the web IDE if needed, start (or reuse) the data services,
// start the server, log in (or create) the local user, register (or reuse) a local drone, start
// it, and then watch: the first child to stop unexpectedly stops the rest.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { homedir, hostname } from "node:os";
import path from "node:path";
import { detectSandbox } from "@gadget/sandbox";
import {
  databaseUrl,
  pingMongo,
  pingRedis,
  type RunningServices,
  startReaper,
  startServices,
} from "@gadget/services";
import { Child } from "./children.ts";
import {
  LaunchError,
  listDrones,
  localSession,
  registrationToken,
  type Session,
} from "./local-account.ts";
import { buildWeb, webBuildIsStale } from "./web-build.ts";

export interface LaunchOptions {
  rootDir: string;
  /** Everything this run keeps: services' data, logs, the local user, the drone and its workspace. */
  dataDir: string;
  host: string;
  port: number;
  /** Use these instead of private services. */
  mongoUrl?: string | undefined;
  redisUrl?: string | undefined;
  /** The environment the server and drone inherit. */
  env: NodeJS.ProcessEnv;
  say: (line: string) => void;
}

export interface Running {
  url: string;
  session: Session;
  droneName: string;
  /** Settles when a child stopped on its own: which one, and how. */
  failed: Promise<{ child: Child; code: number | null; signal: NodeJS.Signals | null }>;
  /** Stops the drone, then the server, then the services. */
  stop(): Promise<void>;
  /** Ends everything now (a second Ctrl-C). */
  kill(): void;
}

const tsxLoader = import.meta.resolve("tsx");

/** Where `pnpm services:up` records services it left running; reused when they still answer. */
function runningDevServices(dataDir: string): { mongoUrl: string; redisUrl: string } | null {
  const stateFile = path.join(dataDir, "services", "state.json");
  if (!existsSync(stateFile)) return null;
  try {
    return JSON.parse(readFileSync(stateFile, "utf8")) as { mongoUrl: string; redisUrl: string };
  } catch {
    return null;
  }
}

async function answers(urls: { mongoUrl: string; redisUrl: string }): Promise<boolean> {
  try {
    await Promise.all([pingMongo(urls.mongoUrl), pingRedis(urls.redisUrl)]);
    return true;
  } catch {
    return false;
  }
}

/** Checks every 200 ms until `check` answers true; its errors end the wait at once. */
async function poll(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline)
      throw new LaunchError(`gave up waiting for ${what} after ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Runs a command to the end, its output in `logFile`; resolves with its exit code. */
function runToEnd(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; logFile: string },
): Promise<number | null> {
  const child = new Child({ name: args[0] ?? command, command, args, ...options });
  // Ends with the launcher: a registration left running would write the drone's config later,
  // over the one the next start makes.
  startReaper([child.pid]);
  return child.exited.then(({ code }) => code);
}

/**
 * Starts the stack and answers once the drone is online.
 * @example const running = await launch({ rootDir, dataDir, host, port, env, say: console.log });
 */
export async function launch(options: LaunchOptions): Promise<Running> {
  const { rootDir, dataDir, say } = options;
  const logsDir = path.join(dataDir, "logs");
  mkdirSync(logsDir, { recursive: true });
  const children: Child[] = [];
  const stateFile = path.join(dataDir, "services", "state.json");
  let services: RunningServices | null = null;

  const stop = async () => {
    const [server, drone] = children;
    // The drone first (it finishes or, after 5 s, cancels its turns), so the server records it.
    await drone?.stop(5_000, 1);
    await server?.stop(5_000);
    if (services) {
      await services.stop();
      rmSync(stateFile, { force: true });
    }
  };
  const kill = () => {
    for (const child of children) child.signal("SIGKILL");
    void services?.stop();
  };

  try {
    // 1. The web IDE.
    if (webBuildIsStale(rootDir)) {
      say("building the web IDE…");
      await buildWeb(rootDir, path.join(logsDir, "web-build.log"), options.env);
    }

    // 2. MongoDB-compatible server and Redis.
    let mongoUrl = options.mongoUrl;
    let redisUrl = options.redisUrl;
    if (!mongoUrl || !redisUrl) {
      const devServices = runningDevServices(dataDir);
      if (devServices && (await answers(devServices))) {
        say("using the services `pnpm services:up` started");
        mongoUrl ??= devServices.mongoUrl;
        redisUrl ??= devServices.redisUrl;
      } else {
        say("starting Redis and a MongoDB-compatible server (the first run may build FerretDB)…");
        services = await startServices({
          rootDir,
          dataDir: path.join(dataDir, "services"),
          mongoUrl,
          redisUrl,
          persistent: true,
          log: (line) => say(`  ${line}`),
        });
        mongoUrl ??= services.mongoUrl;
        redisUrl ??= services.redisUrl;
        // So `pnpm gadget-code user …` (and `pnpm services:up`) use these while they run.
        const { mongoUrl: startedMongo, redisUrl: startedRedis, pids } = services;
        writeFileSync(
          stateFile,
          `${JSON.stringify({ mongoUrl: startedMongo, redisUrl: startedRedis, pids }, null, 2)}\n`,
        );
      }
    }
    const database = options.mongoUrl ?? databaseUrl(mongoUrl!, "gadget");

    // 3. The server, with the web IDE.
    const url = `http://${options.host}:${options.port}`;
    const server = new Child({
      name: "server",
      command: process.execPath,
      args: ["--import", tsxLoader, path.join(rootDir, "apps/server/src/cli.ts"), "serve"],
      cwd: rootDir,
      env: {
        ...options.env,
        HOST: options.host,
        PORT: String(options.port),
        MONGO_URL: database,
        REDIS_URL: redisUrl,
        GADGET_DATA_DIR: dataDir,
        GADGET_WEB_DIR: path.join(rootDir, "apps/web/dist"),
        // The local one-command stack: the developer signs up in the browser, and a model server
        // on this machine can be checked from the server too. Both stay as the environment says.
        GADGET_SIGNUP: options.env.GADGET_SIGNUP ?? "open",
        GADGET_ALLOW_PRIVATE_NETWORK: options.env.GADGET_ALLOW_PRIVATE_NETWORK ?? "true",
      },
      logFile: path.join(logsDir, "server.log"),
    });
    children.push(server);
    startReaper([server.pid]);
    say("starting the server…");
    await poll(`the server to answer ${url}/readyz`, 120_000, async () => {
      if (!server.isRunning) {
        throw new LaunchError(childFailure(server, "stopped while starting"));
      }
      const response = await fetch(`${url}/readyz`).catch(() => null);
      return response?.status === 200;
    });

    // 4. The local user (its password is on disk before the server knows the user).
    const session = await localSession(url, path.join(dataDir, "local-user.json"), say);

    // 5. The local drone: reuse its registration when the server still knows it.
    const droneDir = path.join(dataDir, "drone");
    const configFile = path.join(droneDir, "config.json");
    const workspace = path.join(dataDir, "workspace");
    mkdirSync(droneDir, { recursive: true });
    const known = await registeredDrone(configFile, url, session.token);
    const droneName = known ?? `${hostname()} (local)`;
    const droneBin = path.join(rootDir, "apps/drone/bin/gadget-drone.js");
    const droneEnv = { ...options.env, GADGET_DRONE_CONFIG: configFile };
    if (!known) {
      rmSync(configFile, { force: true });
      say("registering a local drone…");
      const token = await registrationToken(url, session.token);
      const code = await runToEnd(
        process.execPath,
        [
          droneBin,
          "register",
          "--server",
          url,
          "--token",
          token,
          "--name",
          droneName,
          "--workspace",
          workspace,
          "--config",
          configFile,
        ],
        { cwd: rootDir, env: droneEnv, logFile: path.join(logsDir, "drone.log") },
      );
      if (code !== 0) {
        throw new LaunchError(
          `registering the local drone failed (exit ${code}); see ${displayPath(path.join(logsDir, "drone.log"))}`,
        );
      }
    }
    // The local stack always starts: without a usable sandbox the drone runs unconfined, and says so.
    const sandbox = await detectSandbox({
      layout: {
        home: homedir(),
        searchPath: (options.env.PATH ?? "").split(path.delimiter).filter(Boolean),
        nodePath: process.execPath,
        uid: process.getuid?.() ?? -1,
      },
      hidden: [dataDir],
      runtimeDirectory: path.join(workspace, ".run"),
      limitProcesses: false,
    });
    if (!sandbox.ok) {
      say(`WARNING: the local drone runs commands WITHOUT a sandbox: ${sandbox.problem}`);
    }
    const drone = new Child({
      name: "drone",
      command: process.execPath,
      args: [
        droneBin,
        "start",
        "--json",
        "--config",
        configFile,
        ...(sandbox.ok ? [] : ["--no-sandbox"]),
      ],
      cwd: rootDir,
      env: droneEnv,
      logFile: path.join(logsDir, "drone.log"),
    });
    children.push(drone);
    startReaper([drone.pid]);
    say("starting the drone…");
    const droneId = (JSON.parse(readFileSync(configFile, "utf8")) as { droneId: string }).droneId;
    await poll("the local drone to come online", 60_000, async () => {
      for (const child of children) {
        if (!child.isRunning) {
          throw new LaunchError(childFailure(child, "stopped while starting"));
        }
      }
      const drones = await listDrones(url, session.token);
      return drones.some((entry) => entry._id === droneId && entry.status === "online");
    });

    const failed = Promise.race(
      children.map((child) => child.exited.then((exit) => ({ child, ...exit }))),
    );
    return { url, session, droneName, failed, stop, kill };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The drone's name when `configFile` registers a drone this server and user still know. */
async function registeredDrone(
  configFile: string,
  url: string,
  token: string,
): Promise<string | null> {
  if (!existsSync(configFile)) return null;
  let config: { droneId?: string; server?: string; name?: string };
  try {
    config = JSON.parse(readFileSync(configFile, "utf8"));
  } catch {
    return null;
  }
  if (config.server?.replace(/\/+$/, "") !== url) return null;
  const drones = await listDrones(url, token);
  const drone = drones.find((entry) => entry._id === config.droneId);
  return drone ? drone.name : null;
}

/** A path as a person in the repository would type it; absolute when outside it. */
export function displayPath(file: string): string {
  const shown = path.relative(process.cwd(), file);
  return shown.startsWith("..") ? file : shown || ".";
}

/** "The server stopped unexpectedly (exit code 1); its log is .gadget/logs/server.log:" + tail. */
export function childFailure(
  child: Child,
  what: string,
  exit?: { code: number | null; signal: NodeJS.Signals | null },
): string {
  const how = exit?.signal
    ? ` (signal ${exit.signal})`
    : exit?.code !== undefined && exit.code !== null
      ? ` (exit code ${exit.code})`
      : "";
  const tail = child.tail();
  return `The ${child.name} ${what}${how}; its log is ${displayPath(child.logFile)}${tail ? `. Last lines:\n${indent(tail)}` : "."}`;
}

function indent(text: string): string {
  return text
    .split("\n")
    .map((line) => `    ${line}`)
    .join("\n");
}
