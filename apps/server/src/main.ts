// `gadget-code serve`: reads the environment, starts private Redis/MongoDB-compatible servers when
// no URL is given, starts the server, and stops gracefully on SIGTERM/SIGINT.
import path from "node:path";
import { createLogger } from "@gadget/logging";
import { databaseUrl, findRepoRoot, startServices } from "@gadget/services";
import type { ServerEnv } from "./env.ts";
import { createGadgetServer } from "./server.ts";

/** Runs the server until a signal stops it. */
export async function serve(env: ServerEnv): Promise<void> {
  const logger = createLogger({ name: "gadget-code", level: env.logLevel });
  let mongoUrl = env.mongoUrl;
  let redisUrl = env.redisUrl;
  let stopServices: (() => Promise<void>) | null = null;
  if (!mongoUrl || !redisUrl) {
    const services = await startServices({
      rootDir: findRepoRoot(),
      dataDir: path.join(env.dataDir, "services"),
      mongoUrl,
      redisUrl,
      persistent: true,
      log: (line) => logger.info(line),
    });
    logger.info(
      { mongo: services.mongoKind, redis: services.redisKind },
      "started private services",
    );
    mongoUrl = env.mongoUrl ?? databaseUrl(services.mongoUrl, "gadget");
    redisUrl = services.redisUrl;
    stopServices = () => services.stop();
  }
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
  });
  // One line a supervisor (or a test) can read.
  console.log(JSON.stringify({ listening: server.url, publicUrl: server.context.publicUrl }));

  let signals = 0;
  const stop = async (signal: string) => {
    signals++;
    if (signals > 1) {
      logger.warn({ signal }, "second signal: exiting now");
      process.exit(1);
    }
    logger.info({ signal }, "stopping: no new work, flushing, closing sockets");
    try {
      await server.close();
      await stopServices?.();
      process.exit(0);
    } catch (error) {
      logger.error({ err: error }, "unclean stop");
      process.exit(1);
    }
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
}
