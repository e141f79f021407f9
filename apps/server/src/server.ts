// createGadgetServer: one server instance (HTTP + Socket.IO on one port), wired to MongoDB and
// Redis. Tests start several in one process on port 0 with their own database and key prefix.
import { type Database, type Models, openDatabase } from "@gadget/db";
import { type Logger, silentLogger } from "@gadget/logging";
import {
  DRONE_SOCKET_PATH,
  DRONES_NAMESPACE,
  IDE_NAMESPACE,
  PROTOCOL_VERSION,
  RELEASE_VERSION,
  SystemError,
} from "@gadget/protocol";
import { createAdapter } from "@socket.io/redis-adapter";
import type { FastifyInstance } from "fastify";
import { Redis } from "ioredis";
import { Server } from "socket.io";
import { droneStanding } from "./auth/drone-credential.ts";
import { RateLimits } from "./auth/rate-limit.ts";
import { SignIns } from "./auth/sign-ins.ts";
import { type ResolvedConfig, resolveConfig, type ServerConfig } from "./config.ts";
import { createSecretBox, type SecretBox } from "./crypto/secret-box.ts";
import { SessionDelivery } from "./delivery/session-delivery.ts";
import { SessionWorktrees } from "./delivery/session-worktrees.ts";
import { Dispatcher } from "./dispatch/dispatcher.ts";
import { labelWaits } from "./dispatch/label-waits.ts";
import { EphemeralDrones } from "./drones/ephemeral-drones.ts";
import { PresenceStore } from "./drones/presence.ts";
import { createHttpApp } from "./http/app.ts";
import { Lifecycle } from "./lifecycle.ts";
import { ProjectRemotes } from "./manage/project-remotes.ts";
import { Removals } from "./manage/removals.ts";
import { createMetrics, type Metrics } from "./metrics/metrics.ts";
import { OutboundPolicy } from "./outbound/outbound-policy.ts";
import { ProviderChecks } from "./providers/provider-checks.ts";
import { ProviderQuirks } from "./providers/provider-quirks.ts";
import { Locks } from "./redis/locks.ts";
import { publishDrone } from "./sockets/drone-updates.ts";
import { attachDroneNamespace } from "./sockets/drones.ts";
import { refusal } from "./sockets/edge.ts";
import { attachIdeNamespace } from "./sockets/ide.ts";
import { type DronesNamespace, type IdeNamespace, userRoom } from "./sockets/rooms.ts";
import { TurnUpdates } from "./sockets/turn-updates.ts";
import { StorageHealth } from "./storage/health.ts";
import { TurnIngest } from "./turns/ingest.ts";
import { LeaseSweeper } from "./turns/lease-sweeper.ts";
import { LiveRelay } from "./turns/live/live-relay.ts";
import { EventWriter } from "./turns/store/event-writer.ts";
import { SeqStore } from "./turns/store/seq-store.ts";
import { TurnIndex } from "./turns/store/turn-index.ts";
import { TurnStore } from "./turns/store/turn-store.ts";
import { TurnReverts } from "./turns/turn-reverts.ts";
import { TurnService } from "./turns/turn-service.ts";
import { Webhooks } from "./webhooks/webhooks.ts";

/** The parts of one server instance, as built by createGadgetServer. */
export interface ServerParts {
  config: ResolvedConfig;
  logger: Logger;
  models: Models;
  /** For commands (not subscriptions). */
  redis: Redis;
  locks: Locks;
  presence: PresenceStore;
  secretBox: SecretBox;
  health: StorageHealth;
  metrics: Metrics;
  signIns: SignIns;
  relay: LiveRelay;
  store: TurnStore;
  eventWriter: EventWriter;
  seqs: SeqStore;
  turnIndex: TurnIndex;
  dispatcher: Dispatcher;
  webhooks: Webhooks;
  ingest: TurnIngest;
  lifecycle: Lifecycle;
}

export interface GadgetServer {
  /** Where it listens, e.g. `http://127.0.0.1:41234`. */
  url: string;
  port: number;
  /** The URL drones and browsers use (`publicUrl` of the config, else `url`). */
  publicUrl: string;
  /** The parts it is made of, for tests and tools (nothing inside the server is handed these). */
  context: ServerParts;
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
  // During an outage an operation fails within a few seconds (and is retried where idempotent)
  // instead of queueing in mongoose: requests and drones get `unavailable` while it lasts.
  const database: Database = await openDatabase(config.mongoUrl, {
    serverSelectionTimeoutMs: 5_000,
    bufferCommands: false,
  });
  // Commands wait for a reconnection instead of failing after a number of retries, but never for
  // longer than commandTimeout: a short outage delays requests, a long one answers `unavailable`.
  const redisOptions = {
    maxRetriesPerRequest: null,
    commandTimeout: config.redisCommandTimeoutMs,
    lazyConnect: false,
  } as const;
  const redis = new Redis(config.redisUrl, redisOptions);
  // The Socket.IO adapter publishes without handling a failure (a rejected publish would be an
  // unhandled rejection), so its connections queue what they send while Redis is away instead of
  // timing out; subscriptions are renewed by ioredis on reconnect.
  const patient = { commandTimeout: undefined } as const;
  const adapterPublisher = redis.duplicate(patient);
  const adapterSubscriber = redis.duplicate(patient);
  const relaySubscriber = redis.duplicate(patient);
  const redisClients = [redis, adapterPublisher, adapterSubscriber, relaySubscriber];
  for (const client of redisClients) {
    client.on("error", (error) => logger.warn({ err: error }, "redis error"));
  }

  // The parts, each given what it uses. The sockets' namespaces exist only once the HTTP server
  // is built, which needs the parts first: those that reach drones or browsers get a getter.
  let drones: DronesNamespace | undefined;
  let ide: IdeNamespace | undefined;
  const dronesNamespace = () => drones!;
  const ideNamespace = () => ide!;
  let publicUrl = config.publicUrl ?? "";
  const models = database.models;
  const lifecycle = new Lifecycle();
  const secretBox = createSecretBox(config.secret);
  const locks = new Locks(redis, config.redisPrefix);
  const limits = new RateLimits(redis, config.redisPrefix);
  const presence = new PresenceStore(redis, config.redisPrefix, config.presenceStaleMs);
  const signIns = new SignIns(models, config.tokenTtlDays * 24 * 60 * 60 * 1000, () => ide);
  const relay = new LiveRelay(
    redis,
    relaySubscriber,
    `${config.redisPrefix}:turn-events`,
    models,
    logger,
  );
  const metrics = createMetrics({
    models,
    connectedDrones: () => drones?.sockets.size ?? 0,
    liveSubscriptions: () => relay.size,
    labelWaits: () => labelWaits({ models, presence }),
  });
  const health = new StorageHealth({
    logger,
    onFailure: (service) => metrics.storageFailures.inc({ service }),
    // Browsers of the turn's user on this server hear of it (the Redis adapter may be down).
    onWaiting: ({ turnId, userId }, waiting) =>
      ide?.local.to(userRoom(userId)).emit("turn_waiting", { turnId, waiting }),
  });
  const turnIndex = new TurnIndex(redis, config.redisPrefix);
  const seqs = new SeqStore(redis, config.redisPrefix, models);
  const eventWriter = new EventWriter(models, health, { retryForMs: config.storageRetryMs });
  const store = new TurnStore({
    models,
    locks,
    seqs,
    turnIndex,
    eventWriter,
    health,
    logger,
    flushIntervalMs: config.turnFlushIntervalMs,
  });
  const providerQuirks = new ProviderQuirks(models);
  // One policy for every request the server sends out: provider checks and webhooks.
  const outbound = new OutboundPolicy({ allowPrivateNetwork: config.allowPrivateNetwork });
  const providerChecks = new ProviderChecks(
    { models, presence, config, drones: dronesNamespace },
    outbound,
    providerQuirks,
  );
  const webhooks = new Webhooks({
    config,
    logger,
    models,
    locks,
    secretBox,
    outbound,
    lifecycle,
    publicUrl: () => publicUrl,
  });
  const dispatcher = new Dispatcher({
    config,
    logger,
    models,
    redis,
    presence,
    store,
    seqs,
    turnIndex,
    secretBox,
    metrics,
    drones: dronesNamespace,
    lifecycle,
  });
  const reverts = new TurnReverts({ models, presence, store, config, drones: dronesNamespace });
  const turnUpdates = new TurnUpdates(ideNamespace, config.turnUpdateIntervalMs);
  const turns = new TurnService({
    config,
    models,
    store,
    dispatcher,
    seqs,
    turnIndex,
    drones: dronesNamespace,
  });
  const ingest = new TurnIngest({ seqs, store, turnIndex, droneGraceMs: config.droneGraceMs });
  const sweeper = new LeaseSweeper(
    {
      models,
      store,
      turnIndex,
      dispatcher,
      presence,
      locks,
      lifecycle,
      logger,
      sweepIntervalMs: config.sweepIntervalMs,
      droneGraceMs: config.droneGraceMs,
    },
    turns,
  );

  // What a turn's write sets off, in this order: the drone's slot follows its hold (under the
  // turn's lock), then the events go live, the user's browsers hear of the turn, and a finished
  // turn is counted and frees its user's next queued turn.
  const ephemeralDrones = new EphemeralDrones({ models, presence, locks, logger });
  store
    .on("held", ({ turnId, droneId }) => dispatcher.slots.add(droneId, turnId))
    .on("released", ({ turnId, droneId }) => dispatcher.slots.remove(droneId, turnId))
    .on("appended", async ({ turnId, events }) => {
      metrics.eventsIngested.inc(events.length);
      // Not worth failing the batch: the provider refuses again and the drone adapts again.
      await providerQuirks.learnFrom(turnId, events).catch((error: unknown) => {
        health.failed(error, turnId);
      });
    })
    // Stored events reach browsers anyway: a missed relay is caught up from the store.
    .on("live", (batch) =>
      relay.publish(batch).catch((error: unknown) => {
        health.failed(error, batch.turnId);
      }),
    )
    .on("written", ({ turn, statusChanged }) => turnUpdates.push(turn, statusChanged))
    .on("written", ({ turn, statusChanged }) => webhooks.turnChanged(turn, statusChanged))
    .on("finished", (turn) => {
      metrics.turnsFinished.inc({ status: turn.status });
      ephemeralDrones.retire(turn).catch((error: unknown) => {
        logger.error({ err: error }, "could not retire an ephemeral drone");
      });
      // A drone slot was freed (or a queued turn ended): start the user's next queued turn.
      dispatcher.kickUser(String(turn.user)).catch((error: unknown) => {
        logger.error({ err: error }, "could not re-enqueue queued turns");
      });
    });

  const sessionDelivery = new SessionDelivery({
    models,
    presence,
    store,
    secretBox,
    config,
    drones: dronesNamespace,
  });

  const sessionWorktrees = new SessionWorktrees({
    models,
    presence,
    config,
    drones: dronesNamespace,
  });

  const removals = new Removals({ models });
  const projectRemotes = new ProjectRemotes({ models, presence, config, drones: dronesNamespace });

  const http = createHttpApp(
    {
      removals,
      projectRemotes,
      sessionDelivery,
      sessionWorktrees,
      config,
      logger,
      models,
      redis,
      metrics,
      lifecycle,
      health,
      limits,
      signIns,
      presence,
      locks,
      secretBox,
      providerChecks,
      providerQuirks,
      store,
      relay,
      reverts,
      webhooks,
      publicUrl: () => publicUrl,
      drones: dronesNamespace,
      droneChanged: async (droneId, userId) => {
        await publishDrone({ models, presence, ide: ideNamespace }, droneId);
        await dispatcher.kickUser(userId);
      },
    },
    turns,
  );
  await http.ready();
  // Subscribe only on ready connections: a SUBSCRIBE sent between "connect" and "ready" is
  // written at once (ioredis lets it through the handshake) and the ready check's INFO then fails
  // in subscriber mode, leaving the adapter and the relay deaf (work-order acks time out, browsers
  // get no live events). A slow start (e.g. listing the web build) opens that window.
  await Promise.all([adapterSubscriber, relaySubscriber].map((client) => whenReady(client)));
  // Each Socket.IO server has its own channels: the browsers' one also answers old drones on
  // its own "/drones" namespace, which must not hear the real drones' broadcasts.
  const adapterFor = (key: string) =>
    createAdapter(adapterPublisher, adapterSubscriber, { key: `${config.redisPrefix}:${key}` });
  const shared = {
    pingInterval: 10_000,
    pingTimeout: 10_000,
    // Two Socket.IO servers share the HTTP server: neither closes the other's upgrades.
    destroyUpgrade: false,
  };
  // Browsers: Socket.IO's default path, small messages (subscriptions are a few hundred bytes).
  const browsersIo = new Server(http.server, {
    ...shared,
    adapter: adapterFor("socket.io"),
    maxHttpBufferSize: 64 * 1024,
  });
  // Drones: their own path, large messages (checkpoints carry a turn's messages; file contents up
  // to 10 MiB), and only for a connection whose HTTP request carried a live drone's credential.
  const dronesIo = new Server(http.server, {
    ...shared,
    adapter: adapterFor("socket.io-drones"),
    path: DRONE_SOCKET_PATH,
    maxHttpBufferSize: 16 * 1024 * 1024,
    allowRequest: (request, callback) => {
      void droneStanding({ models }, request.headers.authorization).then(
        ({ kind }) =>
          callback(kind === "live" ? null : "drone credential required", kind === "live"),
        () => callback("drone credential could not be checked", false),
      );
    },
  });
  // Drones of protocols 1 and 2 connect on the browsers' path: told to upgrade, not ignored.
  browsersIo
    .of(DRONES_NAMESPACE)
    .use((_socket, next) =>
      next(
        refusal(
          "protocol_mismatch",
          `This server speaks protocol ${PROTOCOL_VERSION}; this drone is older. Upgrade gadget-drone: npm install --global gadget-drone@${RELEASE_VERSION}`,
        ),
      ),
    );
  drones = dronesIo.of(DRONES_NAMESPACE) as unknown as DronesNamespace;
  ide = browsersIo.of(IDE_NAMESPACE) as unknown as IdeNamespace;
  attachDroneNamespace(drones, {
    config,
    logger,
    models,
    locks,
    presence,
    dispatcher,
    store,
    turns,
    ingest,
    health,
    metrics,
    lifecycle,
    ide: ideNamespace,
  });
  attachIdeNamespace(ide, { logger, models, relay, signIns });
  await relay.start();
  dispatcher.start();
  webhooks.start();
  sweeper.start();
  // Redis back after an outage may have come back empty: its indexes are rebuilt from the
  // database and queued turns enqueued again now, not at the next periodic repair.
  let redisWasReady = true;
  redis.on("close", () => {
    redisWasReady = false;
  });
  redis.on("ready", () => {
    if (redisWasReady) return;
    redisWasReady = true;
    health.succeeded("redis");
    void sweeper
      .recover()
      .catch((error: unknown) =>
        logger.warn({ err: error }, "recovery after Redis came back failed"),
      );
  });

  // Sockets of revoked or expired tokens close within a sweep (a revocation from this server
  // closes them at once); rows of expired tokens go now and then.
  const housekeeping = [
    setInterval(() => {
      void signIns.closeStale().catch(() => undefined);
    }, 30_000),
    setInterval(() => {
      void signIns.prune().catch(() => undefined);
    }, 60 * 60_000),
  ];
  for (const timer of housekeeping) timer.unref();

  await http.listen({ port: config.port, host: config.host });
  const address = http.server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  const hostForUrl = config.host.includes(":") ? `[${config.host}]` : config.host;
  const url = `http://${hostForUrl === "0.0.0.0" ? "127.0.0.1" : hostForUrl}:${port}`;
  publicUrl = config.publicUrl ?? url;
  logger.info({ url, publicUrl }, "gadget-code server listening");

  let closing: Promise<void> | null = null;
  const close = () => {
    closing ??= (async () => {
      lifecycle.stop();
      for (const timer of housekeeping) clearInterval(timer);
      await sweeper.stop();
      await dispatcher.close();
      await store.flush();
      // Drones see a disconnect and reconnect (to another server); their turns keep their lease.
      drones?.local.disconnectSockets(true);
      ide?.local.disconnectSockets(true);
      await lifecycle.settled();
      await webhooks.close();
      await store.drain();
      turnUpdates.flushAll();
      await Promise.all(
        [browsersIo, dronesIo].map(
          (server) => new Promise<void>((resolve) => server.close(() => resolve())),
        ),
      );
      await http.close().catch(() => undefined);
      await Promise.all(redisClients.map((client) => client.quit().catch(() => undefined)));
      await database.close();
      logger.info("gadget-code server stopped");
    })();
    return closing;
  };

  const parts: ServerParts = {
    config,
    logger,
    models,
    redis,
    locks,
    presence,
    secretBox,
    health,
    metrics,
    signIns,
    relay,
    store,
    eventWriter,
    seqs,
    turnIndex,
    dispatcher,
    webhooks,
    ingest,
    lifecycle,
  };
  return { url, port, publicUrl, context: parts, turns, sweeper, http, close };
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
