// The harness's Redis check against real redis-server processes: `pnpm start` and the tests wait
// on it for a REDIS_URL of any of its three forms, not only one Redis. And a restartable service's
// port: it must come back there, never to find another process answering in its place.
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RestartableService, startRestartableRedis } from "./restartable.ts";
import { freePort, pingRedis, stablePort } from "./wire.ts";

describe("pingRedis", () => {
  let redis: RestartableService;
  let address: string;
  let directory: string;

  beforeAll(async () => {
    directory = await mkdtemp(path.join(tmpdir(), "gadget-ping-redis-"));
    redis = await startRestartableRedis(directory);
    address = new URL(redis.url).host;
  });
  afterAll(async () => {
    await redis?.stop();
    await rm(directory, { recursive: true, force: true });
  });

  it("finds a Cluster's or Sentinel set's node that answers, past one that does not", async () => {
    const dead = `127.0.0.1:${await freePort()}`;
    await expect(pingRedis(`redis://${dead},${address}`)).resolves.toBeUndefined();
    await expect(pingRedis(`redis+cluster://${address}`)).resolves.toBeUndefined();
    // A Sentinel answers PING like any Redis; the check only asks that one of the set is there.
    await expect(
      pingRedis(`redis+sentinel://${dead},${address}/mymaster`),
    ).resolves.toBeUndefined();
  });

  it("names every node it could not reach", async () => {
    const first = `127.0.0.1:${await freePort()}`;
    const second = `127.0.0.1:${await freePort()}`;
    const failure = pingRedis(`redis://${first},${second}`, 500);
    await expect(failure).rejects.toThrow(first);
    await expect(failure).rejects.toThrow(second);
  });

  it("says a REDIS_URL of no form it knows is wrong, instead of waiting on it", async () => {
    await expect(pingRedis("redis+sentinel://127.0.0.1:26379")).rejects.toThrow(/\/mastername/);
  });
});

describe("a restartable service's port", () => {
  it("lies below the kernel's ephemeral range, which listen(0) and outgoing connections use", async () => {
    const [low] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8")
      .trim()
      .split(/\s+/);
    const ports = await Promise.all(Array.from({ length: 20 }, () => stablePort()));
    for (const port of ports) expect(port).toBeLessThan(Number(low));
  });

  it("a restart that finds its port answered by another process says so", async () => {
    const directory = await mkdtemp(path.join(tmpdir(), "gadget-port-taken-"));
    const redis = await startRestartableRedis(directory);
    const port = Number(new URL(redis.url).port);
    await redis.kill();
    // Someone else's Redis-alike on the port while this one was down.
    const impostor = net.createServer((socket) =>
      socket.on("data", () => socket.write("+PONG\r\n")),
    );
    await new Promise<void>((resolve) => impostor.listen(port, "127.0.0.1", resolve));
    try {
      await expect(redis.start()).rejects.toThrow(/not the redis-server started here/);
    } finally {
      await new Promise((resolve) => impostor.close(resolve));
    }
    await redis.start();
    await expect(pingRedis(redis.url)).resolves.toBeUndefined();
    await redis.stop();
    await rm(directory, { recursive: true, force: true });
  });
});
