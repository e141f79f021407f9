// The graceful stop of one server instance, in the order that loses nothing: no new work, the
// work in hand finished and stored, drones and browsers told to go elsewhere, then the edges and
// the connections closed. Drones reconnect to another server; their turns keep their lease.
import type { Database } from "@gadget/db";
import type { Logger } from "@gadget/logging";
import type { FastifyInstance } from "fastify";
import type { SignIns } from "./auth/sign-ins.ts";
import type { Dispatcher } from "./dispatch/dispatcher.ts";
import type { Lifecycle } from "./lifecycle.ts";
import type { RedisConnections } from "./redis/connections.ts";
import type { JobQueues } from "./redis/job-queues.ts";
import type { SocketServers } from "./sockets/io.ts";
import type { TurnUpdates } from "./sockets/turn-updates.ts";
import type { LeaseSweeper } from "./turns/lease-sweeper.ts";
import type { TurnStore } from "./turns/store/turn-store.ts";

/** What a stop closes, each part once. */
export interface StoppedParts {
  lifecycle: Lifecycle;
  signIns: SignIns;
  sweeper: LeaseSweeper;
  jobs: JobQueues;
  dispatcher: Dispatcher;
  store: TurnStore;
  sockets: SocketServers;
  turnUpdates: TurnUpdates;
  http: FastifyInstance;
  connections: RedisConnections;
  database: Database;
  logger: Logger;
}

/**
 * Stops the server; every step waits for the one before it, and `onStep` hears each as it begins
 * (main.ts names the one a stop past its deadline was stuck at).
 */
export async function stopServer(
  parts: StoppedParts,
  onStep: (step: string) => void = () => {},
): Promise<void> {
  // No new work: readiness fails, requests that start work are refused, sweeps end.
  onStep("refusing new work");
  parts.lifecycle.stop();
  parts.signIns.stop();
  await parts.sweeper.stop();
  // No new dispatches here; the ones running (jobs, and turns this server just created) end.
  onStep("finishing dispatches");
  await parts.jobs.stop("dispatch");
  await parts.dispatcher.settled();
  // Drone events taken so far are applied before the drones leave.
  onStep("storing drone events");
  await parts.store.flush();
  parts.sockets.disconnectLocal();
  // Disconnects being handled (their turns' grace periods), deliveries being queued.
  onStep("handling disconnects");
  await parts.lifecycle.settled();
  onStep("closing job queues");
  await parts.jobs.close();
  // Everything written and applied, and the browsers told, before the connections go.
  onStep("writing what is left");
  await parts.store.drain();
  parts.turnUpdates.flushAll();
  onStep("closing sockets and HTTP");
  await parts.sockets.close();
  await parts.http.close().catch(() => undefined);
  onStep("closing Redis and the database");
  await parts.connections.close();
  await parts.database.close();
  parts.logger.info("gadget-code server stopped");
}
