// `gadget-code serve`: reads the environment, starts private Redis/MongoDB-compatible servers when
// no URL is given, starts the server, and stops gracefully on SIGTERM/SIGINT.
import { readFile } from "node:fs/promises";
import path from "node:path";
import { createLogger } from "@gadget/logging";
import { databaseUrl, findRepoRoot, pingMongo, pingRedis, startServices } from "@gadget/services";
import { ensureDronePackage } from "./downloads/build-drone-package.ts";
import type { ServerEnv } from "./env.ts";
import { createGadgetServer } from "./server.ts";

/** Where the server's data lives: the given URLs, services already running, or private ones. */
export async function resolveServices(
  env: ServerEnv,
  log: (line: string) => void,
): Promise<{ mongoUrl: string; redisUrl: string; stop: () => Promise<void> }> {
  if (env.mongoUrl && env.redisUrl) {
    return { mongoUrl: env.mongoUrl, redisUrl: env.redisUrl, stop: async () => {} };
  }
  const dataDir = path.join(env.dataDir, "services");
  // `pnpm services:up` and `pnpm start` record the services they run here.
  const running = await runningServices(dataDir);
  if (running) {
    return {
      mongoUrl: env.mongoUrl ?? databaseUrl(running.mongoUrl, "gadget"),
      redisUrl: env.redisUrl ?? running.redisUrl,
      stop: async () => {},
    };
  }
  const services = await startServices({
    rootDir: findRepoRoot(),
    dataDir,
    mongoUrl: env.mongoUrl,
    redisUrl: env.redisUrl,
    persistent: true,
    log,
  });
  log(`started private services: ${services.mongoKind}, ${services.redisKind}`);
  return {
    mongoUrl: env.mongoUrl ?? databaseUrl(services.mongoUrl, "gadget"),
    redisUrl: services.redisUrl,
    stop: () => services.stop(),
  };
}

async function runningServices(
  dataDir: string,
): Promise<{ mongoUrl: string; redisUrl: string } | null> {
  try {
    const state = JSON.parse(await readFile(path.join(dataDir, "state.json"), "utf8")) as {
      mongoUrl: string;
      redisUrl: string;
    };
    await Promise.all([pingMongo(state.mongoUrl), pingRedis(state.redisUrl)]);
    return state;
  } catch {
    return null;
  }
}

/**
 * The drone package to hand out: GADGET_DRONE_PACKAGE (a .tgz or a directory with one), else this
 * checkout's, built when missing or stale; null (no /install.sh download) when neither exists.
 */
async function findDronePackage(
  env: ServerEnv,
  log: (line: string) => void,
): Promise<string | null> {
  if (env.dronePackage) return env.dronePackage;
  try {
    return await ensureDronePackage({
      rootDir: findRepoRoot(),
      cacheDir: path.join(env.dataDir, "drone-package"),
      log,
    });
  } catch (error) {
    // The server runs without it: only /install.sh's download and `gadget-drone update` miss it.
    log(`no drone package to hand out: ${(error as Error).message}`);
    return null;
  }
}

/** Runs the server until a signal stops it. */
export async function serve(env: ServerEnv): Promise<void> {
  const logger = createLogger({ name: "gadget-code", level: env.logLevel });
  const services = await resolveServices(env, (line) => logger.info(line));
  const { mongoUrl, redisUrl } = services;
  const stopServices = services.stop;
  const dronePackage = await findDronePackage(env, (line) => logger.info(line));
  const server = await createGadgetServer({
    port: env.port,
    host: env.host,
    publicUrl: env.publicUrl,
    mongoUrl,
    redisUrl,
    redisPrefix: env.redisPrefix,
    secret: env.secret,
    logger,
    droneGraceMs: env.droneGraceMs,
    webDir: env.webDir,
    dronePackage,
    trustProxy: env.trustProxy,
    signup: env.signup,
    tokenTtlDays: env.tokenTtlDays,
    allowPrivateNetwork: env.allowPrivateNetwork,
  });
  // One line a supervisor (or a test) can read.
  console.log(JSON.stringify({ listening: server.url, publicUrl: server.publicUrl }));

  let signals = 0;
  const stop = async (signal: string) => {
    signals++;
    if (signals > 1) {
      logger.warn({ signal }, "second signal: exiting now");
      process.exit(1);
    }
    logger.info({ signal }, "stopping: no new work, flushing, closing sockets");
    // A stop that hangs (a database or Redis that does not answer) must still end: what it had
    // not stored, drones send again to another server (they keep events until stored).
    let step = "starting to stop";
    setTimeout(() => {
      logger.error(
        { step, stopTimeoutMs: env.stopTimeoutMs },
        `stop still under way after ${env.stopTimeoutMs} ms (at: ${step}): exiting without finishing it`,
      );
      process.exit(1);
    }, env.stopTimeoutMs).unref();
    try {
      await server.close((next) => {
        step = next;
      });
      step = "stopping the private services";
      await stopServices();
      process.exit(0);
    } catch (error) {
      logger.error({ err: error }, "unclean stop");
      process.exit(1);
    }
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
  // A rejection nobody handled is a bug to fix, not a reason to drop every user's live turns:
  // it is logged (with its stack) and the server goes on. Tests fail on it (vitest reports them).
  process.on("unhandledRejection", (reason) => {
    logger.error({ err: reason }, "unhandled rejection; the server goes on");
  });
}
