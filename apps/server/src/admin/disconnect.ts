// The admin CLI is not a server, but it can reach the servers' sockets: through Redis, the way
// the servers' own adapter does, it tells every server to close the sockets of revoked tokens.
import { silentLogger } from "@gadget/logging";
import { IDE_NAMESPACE } from "@gadget/protocol";
import { Emitter } from "@socket.io/redis-emitter";
import type { Redis } from "ioredis";
import { RedisConnections, whenReady } from "../redis/connections.ts";
import { tokenRoom } from "../sockets/rooms.ts";

/** socket.io-adapter's ClusterAdapter message type for "disconnect these sockets". */
const disconnectSocketsMessage = 6;

/**
 * Closes, on every server, the browser connections signed in with these tokens.
 * @example await disconnectSignIns(redisUrl, "gadget", reset.tokenHashes);
 */
export async function disconnectSignIns(
  redisUrl: string,
  redisPrefix: string,
  tokenHashes: readonly string[],
): Promise<void> {
  if (tokenHashes.length === 0) return;
  const connections = new RedisConnections(redisUrl, {
    commandTimeoutMs: 10_000,
    logger: silentLogger,
  });
  const redis = connections.commands;
  try {
    await whenReady(redis, 10_000);
    const rooms = tokenHashes.map(tokenRoom);
    if (connections.sharded) {
      // The sharded adapter (Redis Cluster) reads ClusterAdapter messages on its namespace's
      // sharded channel; the emitter speaks only the classic adapter's protocol.
      const message = {
        uid: `gadget-code-cli-${process.pid}`,
        nsp: IDE_NAMESPACE,
        type: disconnectSocketsMessage,
        data: { opts: { rooms, except: [] }, close: true },
      };
      await redis.spublish(`${redisPrefix}:socket.io#${IDE_NAMESPACE}#`, JSON.stringify(message));
      return;
    }
    new Emitter(redis as Redis, { key: `${redisPrefix}:socket.io` })
      .of(IDE_NAMESPACE)
      .in(rooms)
      .disconnectSockets(true);
    // The emitter publishes without waiting; a round trip after it means it was sent.
    await redis.ping();
  } finally {
    await connections.close();
  }
}
