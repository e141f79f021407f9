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

/** Stops the server; every step waits for the one before it. */
export async function stopServer(parts: StoppedParts): Promise<void> {
  // No new work: readiness fails, requests that start work are refused, sweeps end.
  parts.lifecycle.stop();
  parts.signIns.stop();
  await parts.sweeper.stop();
  // No new dispatches here; the ones running (jobs, and turns this server just created) end.
  await parts.jobs.stop("dispatch");
  await parts.dispatcher.settled();
  // Drone events taken so far are applied before the drones leave.
  await parts.store.flush();
  parts.sockets.disconnectLocal();
  // Disconnects being handled (their turns' grace periods), deliveries being queued.
  await parts.lifecycle.settled();
  await parts.jobs.close();
  // Everything written and applied, and the browsers told, before the connections go.
  await parts.store.drain();
  parts.turnUpdates.flushAll();
  await parts.sockets.close();
  await parts.http.close().catch(() => undefined);
  await parts.connections.close();
  await parts.database.close();
  parts.logger.info("gadget-code server stopped");
}
