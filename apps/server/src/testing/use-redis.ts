// Redis connections to the harness's Redis for a test file, closed after it (vitest hooks, like
// use-test-server.ts, so not part of `@gadget/server/testing`).
import { Redis } from "ioredis";
import { afterAll, inject } from "vitest";

/**
 * Returns a function that opens a new connection (as another server would have); all of them
 * are closed after the file.
 * @example const client = useRedisClients(); const first = new Locks(client(), prefix);
 */
export function useRedisClients(): () => Redis {
  const clients: Redis[] = [];
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.quit()));
  });
  return () => {
    const redis = new Redis(inject("redisUrl"));
    clients.push(redis);
    return redis;
  };
}
