// The two Socket.IO servers of one instance, built before anything that talks to a drone or a
// browser (so every part is handed its namespace) and attached to the HTTP server once that
// exists: the browsers' on Socket.IO's default path, the drones' on their own path. Each has its
// own Redis adapter channels, so a message reaches a drone or a browser on any server.
import type { Server as HttpServer } from "node:http";
import type { Models } from "@gadget/db";
import {
  DRONE_SOCKET_PATH,
  DRONES_NAMESPACE,
  type DroneClientToServerEvents,
  type DroneServerToClientEvents,
  IDE_NAMESPACE,
  type IdeClientToServerEvents,
  type IdeServerToClientEvents,
  PROTOCOL_VERSION,
  RELEASE_VERSION,
} from "@gadget/protocol";
import { createAdapter, createShardedAdapter } from "@socket.io/redis-adapter";
import { Server } from "socket.io";
import { droneStanding } from "../auth/drone-credential.ts";
import type { RedisClient } from "../redis/connections.ts";
import { refusal } from "./edge.ts";
import type { DroneSocketData, DronesNamespace, IdeNamespace, IdeSocketData } from "./rooms.ts";

export interface SocketServersOptions {
  models: Models;
  /** Prefix of the adapters' channels (`<redisPrefix>:socket.io`, `…:socket.io-drones`). */
  redisPrefix: string;
  /**
   * The adapters' connections, patient ones (see RedisConnections). The subscriber must be ready:
   * the adapter subscribes as the server is built, and a SUBSCRIBE sent before the ready check
   * leaves it deaf.
   */
  publisher: RedisClient;
  subscriber: RedisClient;
  /** A Redis Cluster: the sharded adapter, on Redis 7's sharded pub/sub (decision 0054). */
  sharded: boolean;
}

export interface SocketServers {
  drones: DronesNamespace;
  ide: IdeNamespace;
  /** Starts answering on the HTTP server's port (both share it). */
  attach(http: HttpServer): void;
  /** Closes both servers (their sockets first: see `disconnectLocal`). */
  close(): Promise<void>;
  /** Disconnects this server's sockets: drones reconnect (elsewhere), browsers too. */
  disconnectLocal(): void;
}

/** Builds the browsers' and the drones' Socket.IO servers, not yet attached. */
export function createSocketServers(options: SocketServersOptions): SocketServers {
  // Sharded: one channel per namespace ("static"), so every server hears every broadcast as with
  // the classic adapter; per-room channels ("dynamic") could miss a broadcast sent while a
  // server's subscription to a new room is still on its way.
  const adapterFor = (key: string) =>
    options.sharded
      ? createShardedAdapter(options.publisher, options.subscriber, {
          channelPrefix: `${options.redisPrefix}:${key}`,
          subscriptionMode: "static",
        })
      : createAdapter(options.publisher, options.subscriber, {
          key: `${options.redisPrefix}:${key}`,
        });
  const shared = {
    pingInterval: 10_000,
    pingTimeout: 10_000,
    // Two Socket.IO servers share the HTTP server: neither closes the other's upgrades.
    destroyUpgrade: false,
  };
  // Browsers: Socket.IO's default path, small messages (subscriptions are a few hundred bytes).
  const browsersIo = new Server<
    IdeClientToServerEvents,
    IdeServerToClientEvents,
    Record<string, never>,
    IdeSocketData
  >({
    ...shared,
    adapter: adapterFor("socket.io"),
    maxHttpBufferSize: 64 * 1024,
  });
  // Drones: their own path, large messages (checkpoints carry a turn's messages; file contents up
  // to 10 MiB), and only for a connection whose HTTP request carried a live drone's credential.
  const dronesIo = new Server<
    DroneClientToServerEvents,
    DroneServerToClientEvents,
    Record<string, never>,
    DroneSocketData
  >({
    ...shared,
    adapter: adapterFor("socket.io-drones"),
    path: DRONE_SOCKET_PATH,
    maxHttpBufferSize: 16 * 1024 * 1024,
    allowRequest: (request, callback) => {
      void droneStanding(options, request.headers.authorization).then(
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
          `This server speaks protocol ${PROTOCOL_VERSION}; this drone is older. Install gadget-drone ${RELEASE_VERSION} from this server: curl -fsSL <server>/install.sh | sh`,
        ),
      ),
    );
  const drones: DronesNamespace = dronesIo.of(DRONES_NAMESPACE);
  const ide: IdeNamespace = browsersIo.of(IDE_NAMESPACE);
  const servers = [browsersIo, dronesIo];
  return {
    drones,
    ide,
    attach(http) {
      for (const server of servers) server.attach(http);
    },
    disconnectLocal() {
      drones.local.disconnectSockets(true);
      ide.local.disconnectSockets(true);
    },
    async close() {
      await Promise.all(
        servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))),
      );
    },
  };
}
