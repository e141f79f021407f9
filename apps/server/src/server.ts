// createGadgetServer: one server instance (HTTP + Socket.IO on one port), wired to MongoDB and
// Redis. Tests start several in one process on port 0 with their own database and key prefix.
import { type Database, openDatabase } from "@gadget/db";
import { silentLogger } from "@gadget/logging";
import { SystemError } from "@gadget/protocol";
import { createAdapter } from "@socket.io/redis-adapter";
import type { FastifyInstance } from "fastify";
import { Redis } from "ioredis";
import { Server } from "socket.io";
import { resolveConfig, type ServerConfig } from "./config.ts";
import type { DronesNamespace, IdeNamespace, ServerContext } from "./context.ts";
import { createSecretBox } from "./crypto/secret-box.ts";
import { Dispatcher } from "./dispatch/dispatcher.ts";
import { PresenceStore } from "./drones/presence.ts";
import { createHttpApp } from "./http/app.ts";
import { createMetrics } from "./metrics/metrics.ts";
import { Locks } from "./redis/locks.ts";
import { attachDroneNamespace } from "./sockets/drones.ts";
import { attachIdeNamespace } from "./sockets/ide.ts";
import { EventWriter } from "./turns/event-writer.ts";
import { LeaseSweeper } from "./turns/lease-sweeper.ts";
import { LiveRelay } from "./turns/live-relay.ts";
import { SeqStore } from "./turns/seq-store.ts";
import { TurnAccumulator } from "./turns/turn-accumulator.ts";
import { TurnIndex } from "./turns/turn-index.ts";
import { TurnService } from "./turns/turn-service.ts";
import { TurnStore } from "./turns/turn-store.ts";

export interface GadgetServer {
  /** Where it listens, e.g. `http://127.0.0.1:41234`. */
  url: string;
  port: number;
  context: ServerContext;
  turns: TurnService;
  sweeper: LeaseSweeper;
  http: FastifyInstance;
  /** Graceful stop: no new work, flush, disconnect sockets (drones reconnect elsewhere), close. */
  close(): Promise<void>;
}

/**
 * Starts a server instance.
 * @example const server = await createGadgetServer({ port: 0, mongoUrl, redisUrl, secret }); await fetch(`${server.url}/healthz`);
 */
export async function createGadgetServer(input: ServerConfig): Promise<GadgetServer> {
  const config = resolveConfig(input);
  const logger = (input.logger ?? silentLogger).child({ serverId: config.serverId });
  const database: Database = await openDatabase(config.mongoUrl);
  const redisOptions = { maxRetriesPerRequest: 20, lazyConnect: false } as const;
  const redis = new Redis(config.redisUrl, redisOptions);
  const adapterPublisher = redis.duplicate();
  const adapterSubscriber = redis.duplicate();
  const relaySubscriber = redis.duplicate();
  const redisClients = [redis, adapterPublisher, adapterSubscriber, relaySubscriber];
  for (const client of redisClients) {
    client.on("error", (error) => logger.warn({ err: error }, "redis error"));
  }

  const context = {
    config,
    publicUrl: config.publicUrl ?? "",
    logger,
    models: database.models,
    redis,
    locks: new Locks(redis, config.redisPrefix),
    presence: new PresenceStore(redis, config.redisPrefix, config.presenceStaleMs),
    secretBox: createSecretBox(config.secret),
    accepting: true,
    background: new Set(),
  } as unknown as ServerContext;
  context.relay = new LiveRelay(
    redis,
    relaySubscriber,
    `${config.redisPrefix}:turn-events`,
    database.models,
    logger,
  );
  context.turnIndex = new TurnIndex(redis, config.redisPrefix);
  context.seqs = new SeqStore(redis, config.redisPrefix, database.models);
  context.eventWriter = new EventWriter(database.models);
  context.accumulator = new TurnAccumulator(context);
  context.turnMeta = new Map();
  context.turnChains = new Map();
  context.store = new TurnStore(context);
  context.dispatcher = new Dispatcher(context);
  const turns = new TurnService(context);
  const sweeper = new LeaseSweeper(context, turns);

  const http = createHttpApp(context, turns);
  await http.ready();
  // Subscribe only on ready connections: a SUBSCRIBE sent between "connect" and "ready" is
  // written at once (ioredis lets it through the handshake) and the ready check's INFO then fails
  // in subscriber mode, leaving the adapter and the relay deaf (work-order acks time out, browsers
  // get no live events). A slow start (e.g. listing the web build) opens that window.
  await Promise.all([adapterSubscriber, relaySubscriber].map((client) => whenReady(client)));
  const io = new Server(http.server, {
    // Checkpoints carry a turn's messages; file writes up to 10 MiB.
    maxHttpBufferSize: 16 * 1024 * 1024,
    adapter: createAdapter(adapterPublisher, adapterSubscriber, {
      key: `${config.redisPrefix}:socket.io`,
    }),
    pingInterval: 10_000,
    pingTimeout: 10_000,
  });
  context.drones = io.of("/drones") as unknown as DronesNamespace;
  context.ide = io.of("/ide") as unknown as IdeNamespace;
  context.metrics = createMetrics({
    models: database.models,
    connectedDrones: () => context.drones.sockets.size,
  });
  attachDroneNamespace(context, turns);
  attachIdeNamespace(context);
  await context.relay.start();
  context.dispatcher.start();
  sweeper.start();

  await http.listen({ port: config.port, host: config.host });
  const address = http.server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  const hostForUrl = config.host.includes(":") ? `[${config.host}]` : config.host;
  const url = `http://${hostForUrl === "0.0.0.0" ? "127.0.0.1" : hostForUrl}:${port}`;
  context.publicUrl = config.publicUrl ?? url;
  logger.info({ url, publicUrl: context.publicUrl }, "gadget-code server listening");

  let closing: Promise<void> | null = null;
  const close = () => {
    closing ??= (async () => {
      context.accepting = false;
      await sweeper.stop();
      await context.dispatcher.close();
      await context.accumulator.flushAll();
      // Drones see a disconnect and reconnect (to another server); their turns keep their lease.
      context.drones.local.disconnectSockets(true);
      context.ide.local.disconnectSockets(true);
      await Promise.allSettled([...context.background]);
      await context.eventWriter.drain();
      await context.accumulator.flushAll();
      context.store.flushAll();
      await new Promise<void>((resolve) => io.close(() => resolve()));
      await http.close().catch(() => undefined);
      await Promise.all(redisClients.map((client) => client.quit().catch(() => undefined)));
      await database.close();
      logger.info("gadget-code server stopped");
    })();
    return closing;
  };

  return { url, port, context, turns, sweeper, http, close };
}

/**
 * Resolves once `client` has passed its ready check. ioredis reconnects for ever, so an unreachable
 * Redis fails the start after `timeoutMs` instead of hanging it.
 */
function whenReady(client: Redis, timeoutMs = 30_000): Promise<void> {
  if (client.status === "ready") return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onReady = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      client.off("ready", onReady);
      reject(
        new SystemError("redis_unavailable", `Redis was not ready within ${timeoutMs / 1000} s`),
      );
    }, timeoutMs);
    client.once("ready", onReady);
  });
}
