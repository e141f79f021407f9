// createGadgetServer: one server instance (HTTP + Socket.IO on one port), wired to MongoDB and
// Redis. The composition root: every part is built here, given what it uses, and here alone it is
// said who hears what. Tests start several in one process on port 0, each its own database/prefix.
import { type Database, type Models, openDatabase } from "@gadget/db";
import { type Logger, silentLogger } from "@gadget/logging";
import type { FastifyInstance } from "fastify";
import { RateLimits } from "./auth/rate-limit.ts";
import { SignIns } from "./auth/sign-ins.ts";
import { type ResolvedConfig, resolveConfig, type ServerConfig } from "./config.ts";
import { createSecretBox, type SecretBox } from "./crypto/secret-box.ts";
import { SessionDelivery } from "./delivery/session-delivery.ts";
import { SessionWorktrees } from "./delivery/session-worktrees.ts";
import { Dispatcher, type DispatchJob } from "./dispatch/dispatcher.ts";
import { labelWaits } from "./dispatch/label-waits.ts";
import { SessionQueues } from "./dispatch/session-queues.ts";
import { DronePackages } from "./downloads/drone-package.ts";
import { EphemeralDrones } from "./drones/ephemeral-drones.ts";
import { PresenceStore } from "./drones/presence.ts";
import { createForgeEvents } from "./forge-events/wire.ts";
import { createHttpApp } from "./http/app.ts";
import { Lifecycle } from "./lifecycle.ts";
import { ProjectRemotes } from "./manage/project-remotes.ts";
import { Removals } from "./manage/removals.ts";
import { createMetrics, type Metrics } from "./metrics/metrics.ts";
import { OutboundPolicy } from "./outbound/outbound-policy.ts";
import { ProviderChecks } from "./providers/provider-checks.ts";
import { ProviderQuirks } from "./providers/provider-quirks.ts";
import { openRedisConnections, type RedisClient } from "./redis/connections.ts";
import { JobQueues } from "./redis/job-queues.ts";
import { keyTag } from "./redis/key-space.ts";
import { Locks } from "./redis/locks.ts";
import { stopServer } from "./shutdown.ts";
import { DroneOrders } from "./sockets/drone-orders.ts";
import { publishDrone } from "./sockets/drone-updates.ts";
import { attachDroneNamespace } from "./sockets/drones.ts";
import { attachIdeNamespace } from "./sockets/ide.ts";
import { createSocketServers } from "./sockets/io.ts";
import { userRoom } from "./sockets/rooms.ts";
import { TurnUpdates } from "./sockets/turn-updates.ts";
import { StorageHealth } from "./storage/health.ts";
import { AutoResumer } from "./turns/auto-resume.ts";
import { DroneLoss } from "./turns/drone-loss.ts";
import { TurnIngest } from "./turns/ingest.ts";
import { LeaseSweeper } from "./turns/lease-sweeper.ts";
import { LiveRelay } from "./turns/live/live-relay.ts";
import { SessionRewinds } from "./turns/session-rewinds.ts";
import { EventWriter } from "./turns/store/event-writer.ts";
import { SeqStore } from "./turns/store/seq-store.ts";
import { TurnIndex } from "./turns/store/turn-index.ts";
import { TurnStore } from "./turns/store/turn-store.ts";
import { TurnReverts } from "./turns/turn-reverts.ts";
import { TurnService } from "./turns/turn-service.ts";
import { type DeliveryJob, Webhooks } from "./webhooks/webhooks.ts";

/** The parts of one server instance, as built by createGadgetServer. */
export interface ServerParts {
  config: ResolvedConfig;
  logger: Logger;
  models: Models;
  /** For commands (not subscriptions). */
  redis: RedisClient;
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
  /** Graceful stop (drones reconnect elsewhere); `onStep` hears each step as it begins. */
  close(onStep?: (step: string) => void): Promise<void>;
}

/**
 * Starts a server instance.
 * @example const server = await createGadgetServer({ port: 0, mongoUrl, redisUrl, secret }); await fetch(`${server.url}/healthz`);
 */
export async function createGadgetServer(input: ServerConfig): Promise<GadgetServer> {
  const config = resolveConfig(input);
  // Hashed at start (a missing or misnamed package fails here, not at a user's install).
  const dronePackages = new DronePackages(config.dronePackage);
  await dronePackages.current();
  const logger = (input.logger ?? silentLogger).child({ serverId: config.serverId });
  // During an outage an operation fails within a few seconds (and is retried where idempotent)
  // instead of queueing in mongoose: requests and drones get `unavailable` while it lasts.
  const database: Database = await openDatabase(config.mongoUrl, {
    serverSelectionTimeoutMs: 5_000,
    bufferCommands: false,
  });
  const models = database.models;
  const { connections, adapterPublisher, adapterSubscriber, relaySubscriber } =
    await openRedisConnections(config.redisUrl, {
      commandTimeoutMs: config.redisCommandTimeoutMs,
      logger,
    });
  const redis = connections.commands;

  // The edges to drones and browsers first: every part that talks to them is handed them.
  const sockets = createSocketServers({
    models,
    redisPrefix: config.redisPrefix,
    publisher: adapterPublisher,
    subscriber: adapterSubscriber,
    sharded: connections.sharded,
  });
  const { drones, ide } = sockets;
  const jobs = new JobQueues(connections, { redisPrefix: config.redisPrefix, logger });

  // Storage: outages, locks, turns and their events.
  let publicUrl = config.publicUrl ?? "";
  const lifecycle = new Lifecycle();
  const secretBox = createSecretBox(config.secret);
  const keys = keyTag(config.redisPrefix); // every key in one cluster slot (key-space.ts)
  const locks = new Locks(redis, keys);
  const limits = new RateLimits(redis, keys);
  const presence = new PresenceStore(redis, keys, config.presenceStaleMs);
  const signIns = new SignIns(models, config.tokenTtlDays * 24 * 60 * 60 * 1000, ide);
  const relay = new LiveRelay(
    redis,
    relaySubscriber,
    `${config.redisPrefix}:turn-events`,
    models,
    logger,
    connections.sharded,
  );
  const metrics = createMetrics({
    models,
    connectedDrones: () => drones.sockets.size,
    liveSubscriptions: () => relay.size,
    labelWaits: () => labelWaits({ models, presence }),
  });
  const health = new StorageHealth({
    logger,
    onFailure: (service) => metrics.storageFailures.inc({ service }),
    // The turn's user's browsers on every server hear of it through the Redis adapter; on this
    // server only when Redis is what is down (the adapter cannot publish then).
    onWaiting: ({ turnId, userId }, waiting, service) =>
      (service === "redis" ? ide.local : ide)
        .to(userRoom(userId))
        .emit("turn_waiting", { turnId, waiting }),
  });
  const turnIndex = new TurnIndex(redis, keys);
  const seqs = new SeqStore(redis, keys, models);
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

  // What acts on turns, drones, providers and webhooks.
  const providerQuirks = new ProviderQuirks(models, locks);
  // One policy for every request the server sends out: provider checks and webhooks.
  const outbound = new OutboundPolicy({ allowPrivateNetwork: config.allowPrivateNetwork });
  // What asks the user's drones (the one holding a session's worktree): checks, reverts, rewinds.
  const holders = { models, presence, store, config, drones };
  const providerChecks = new ProviderChecks({ ...holders, locks }, outbound, providerQuirks);
  const webhooks = new Webhooks({
    config,
    logger,
    models,
    locks,
    secretBox,
    outbound,
    lifecycle,
    queue: jobs.queue<DeliveryJob>("webhooks"),
    publicUrl: () => publicUrl,
  });
  const dispatcher = new Dispatcher({
    queues: new SessionQueues({ models, locks }),
    config,
    logger,
    models,
    redis,
    queue: jobs.queue<DispatchJob>("dispatch"),
    presence,
    store,
    seqs,
    turnIndex,
    secretBox,
    metrics,
    orders: new DroneOrders(drones, config),
    lifecycle,
  });
  const reverts = new TurnReverts(holders);
  const rewinds = new SessionRewinds({ ...holders, locks, secretBox });
  const turnUpdates = new TurnUpdates(ide, config.turnUpdateIntervalMs);
  const turnParts = { config, models, locks, store, dispatcher, seqs, turnIndex, drones };
  const turns = new TurnService({ ...turnParts, steering: { locks, logger } });
  const forgeParts = { models, secretBox, locks, logger, lifecycle, turns, outbound };
  const forgeEvents = createForgeEvents(forgeParts, () => publicUrl);
  const ingest = new TurnIngest({ seqs, store, turnIndex, droneGraceMs: config.droneGraceMs });
  const loss = new DroneLoss({ store, droneGraceMs: config.droneGraceMs });
  const autoResumer = new AutoResumer({ models, store, dispatcher });
  const { sweepIntervalMs, droneGraceMs } = config;
  const sweeper = new LeaseSweeper(
    { models, store, turnIndex, dispatcher, presence, locks, lifecycle, logger, autoResumer },
    { sweepIntervalMs, droneGraceMs },
    turns,
  );
  const ephemeralDrones = new EphemeralDrones({ models, presence, locks, logger });
  const sessionDelivery = new SessionDelivery({ ...holders, locks, secretBox });
  const sessionWorktrees = new SessionWorktrees({ models, presence, config, drones, locks });
  const removals = new Removals({ models });
  const projectRemotes = new ProjectRemotes({ models, presence, config, drones });

  // Who hears what. A turn's write sets off, in this order: the drone's slot follows its hold
  // (under the turn's lock); a drone's new events are counted and teach the provider's quirks;
  // stored events go live; the user's browsers and webhooks hear of the turn; a finished turn is
  // counted, retires an ephemeral drone, queues the messages it did not take, starts its
  // session's next turn and frees its user's next queued turn.
  store
    .on("held", ({ turnId, droneId, slotTaken }) =>
      slotTaken ? undefined : dispatcher.slots.add(droneId, turnId),
    )
    .on("released", ({ turnId, droneId }) => dispatcher.slots.remove(droneId, turnId))
    .on("appended", async ({ turnId, events }) => {
      metrics.eventsIngested.inc(events.length);
      await turns.messages.taken(events).catch((error: unknown) => health.failed(error, turnId));
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
      forgeEvents.turnFinished(turn);
      ephemeralDrones.retire(turn).catch((error: unknown) => {
        logger.error({ err: error }, "could not retire an ephemeral drone");
      });
      void turns.finished(turn);
    });
  // The session's next turns prefer the drone that accepted this one (not waited for).
  dispatcher.on("accepted", ({ turnId, droneId, session }) => {
    const recorded = sessionWorktrees.tookTurn(session, droneId).catch((error: unknown) => {
      logger.warn({ err: error, turnId }, "could not record the session's drone");
    });
    lifecycle.track(recorded);
  });

  const http = createHttpApp(
    {
      dronePackages,
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
      rewinds,
      webhooks,
      forgeEvents,
      publicUrl: () => publicUrl,
      drones,
      droneChanged: async (droneId, userId) => {
        await publishDrone({ models, presence, ide }, droneId);
        await dispatcher.kickUser(userId);
      },
    },
    turns,
  );
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
    loss,
    autoResumer,
    health,
    metrics,
    lifecycle,
    ide,
  });
  attachIdeNamespace(ide, { logger, models, relay, signIns });

  // Start: the HTTP app, then the sockets on its server, the relay, the queues' workers, sweeps.
  await http.ready();
  sockets.attach(http.server);
  await relay.start();
  jobs.work<DispatchJob>("dispatch", (job) => dispatcher.process(job.data), {
    concurrency: config.dispatchConcurrency,
  });
  jobs.work<DeliveryJob>("webhooks", (job) => webhooks.process(job), { concurrency: 16 });
  void webhooks.requeuePending().catch((err: unknown) => logger.warn({ err }, "requeue failed"));
  sweeper.start();
  signIns.start();
  // Redis back after an outage may be empty: indexes rebuilt, queued turns enqueued again, now.
  connections.onReturn(() => {
    health.succeeded("redis");
    void Promise.all([sweeper.recover(), webhooks.requeuePending()]).catch((error: unknown) =>
      logger.warn({ err: error }, "recovery after Redis came back failed"),
    );
  });

  await http.listen({ port: config.port, host: config.host });
  const address = http.server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  const hostForUrl = config.host.includes(":") ? `[${config.host}]` : config.host;
  const url = `http://${hostForUrl === "0.0.0.0" ? "127.0.0.1" : hostForUrl}:${port}`;
  publicUrl = config.publicUrl ?? url;
  logger.info({ url, publicUrl }, "gadget-code server listening");

  let closing: Promise<void> | null = null;
  const close = (onStep?: (step: string) => void) => {
    closing ??= stopServer(
      {
        lifecycle,
        signIns,
        sweeper,
        jobs,
        dispatcher,
        store,
        sockets,
        turnUpdates,
        http,
        connections,
        database,
        logger,
      },
      onStep,
    );
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
