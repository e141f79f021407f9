// The admin CLI is not a server, but it can reach the servers' sockets: through Redis, the way
// the servers' own adapter does, it tells every server to close the sockets of revoked tokens.
import { IDE_NAMESPACE } from "@gadget/protocol";
import { Emitter } from "@socket.io/redis-emitter";
import { Redis } from "ioredis";
import { tokenRoom } from "../sockets/rooms.ts";

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
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 2 });
  try {
    await redis.connect();
    new Emitter(redis, { key: `${redisPrefix}:socket.io` })
      .of(IDE_NAMESPACE)
      .in(tokenHashes.map(tokenRoom))
      .disconnectSockets(true);
    // The emitter publishes without waiting; a round trip after it means it was sent.
    await redis.ping();
  } finally {
    await redis.quit().catch(() => undefined);
  }
}
