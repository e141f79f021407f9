// Minimal wire-level health checks: a MongoDB OP_MSG ping and a Redis PING, with no client library.
import { readFileSync } from "node:fs";
import net from "node:net";
import { parseRedisUrl, redisAddresses } from "./redis-url.ts";

function exchange(
  host: string,
  port: number,
  request: Buffer,
  isComplete: (data: Buffer) => boolean,
  timeoutMs: number,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port });
    let received = Buffer.alloc(0);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer from ${host}:${port} within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on("connect", () => socket.write(request));
    socket.on("data", (chunk) => {
      received = Buffer.concat([received, chunk]);
      if (isComplete(received)) {
        clearTimeout(timer);
        socket.end();
        resolve(received);
      }
    });
    socket.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

/** Encodes `{ping: 1, $db: "admin"}` as BSON. */
function pingDocument(): Buffer {
  const parts = [
    Buffer.from([0x10]),
    Buffer.from("ping\0"),
    int32(1),
    Buffer.from([0x02]),
    Buffer.from("$db\0"),
    int32(6),
    Buffer.from("admin\0"),
    Buffer.from([0x00]),
  ];
  const body = Buffer.concat(parts);
  return Buffer.concat([int32(body.length + 4), body]);
}

function int32(value: number): Buffer {
  const buffer = Buffer.alloc(4);
  buffer.writeInt32LE(value);
  return buffer;
}

const OP_MSG = 2013;

/** Sends a `ping` command over the MongoDB wire protocol; resolves when an OP_MSG reply with ok: 1 arrives. */
export async function pingMongo(url: string, timeoutMs = 2000): Promise<void> {
  const { hostname, port } = new URL(url);
  const document = pingDocument();
  const body = Buffer.concat([int32(0), Buffer.from([0x00]), document]);
  const header = Buffer.concat([int32(16 + body.length), int32(1), int32(0), int32(OP_MSG)]);
  const reply = await exchange(
    hostname,
    Number(port || 27017),
    Buffer.concat([header, body]),
    (data) => data.length >= 4 && data.length >= data.readInt32LE(0),
    timeoutMs,
  );
  if (reply.readInt32LE(12) !== OP_MSG) throw new Error("reply is not an OP_MSG");
  // The reply document holds `ok: 1.0` as a double element: 0x01 "ok\0" <8 bytes>.
  const okAt = reply.indexOf(Buffer.from([0x01, 0x6f, 0x6b, 0x00]), 21);
  if (okAt < 0 || reply.readDoubleLE(okAt + 4) !== 1) throw new Error("ping did not answer ok: 1");
}

/** Sends PING over RESP to the Redis, or to any node of the Cluster or Sentinel set, REDIS_URL names; resolves when one answers. */
export async function pingRedis(url: string, timeoutMs = 2000): Promise<void> {
  const target = parseRedisUrl(url);
  const failures: string[] = [];
  // A Cluster or Sentinel set is there when any of its nodes answers; the server's client finds
  // the rest (and the master) itself.
  for (const { host, port } of redisAddresses(target)) {
    try {
      // Over TLS only the port is checked: the certificate is the server's client's to judge.
      if (target.tls) return await connects(host, port, timeoutMs);
      const reply = (
        await exchange(
          host,
          port,
          Buffer.from("PING\r\n"),
          (data) => data.includes("\r\n"),
          timeoutMs,
        )
      ).toString();
      // -NOAUTH: a Redis with a password, which the server will give.
      if (reply.startsWith("+PONG") || reply.startsWith("-NOAUTH")) return;
      failures.push(`${host}:${port} answered ${reply.trim()}`);
    } catch (error) {
      failures.push(`${host}:${port}: ${(error as Error).message}`);
    }
  }
  throw new Error(failures.join("; "));
}

function connects(host: string, port: number, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port, timeout: timeoutMs });
    socket.once("connect", () => {
      socket.destroy();
      resolve();
    });
    socket.once("timeout", () => {
      socket.destroy();
      reject(new Error(`no connection within ${timeoutMs} ms`));
    });
    socket.once("error", reject);
  });
}

/** Polls `check` until it succeeds or `timeoutMs` passes. */
export async function waitUntil(
  what: string,
  check: () => Promise<void>,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      await check();
      return;
    } catch (error) {
      lastError = error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  throw new Error(`${what} did not answer within ${timeoutMs} ms: ${String(lastError)}`);
}

/** The first port of the kernel's ephemeral range: what `listen(0)` and outgoing connections take. */
function ephemeralFloor(): number {
  try {
    const [low] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8")
      .trim()
      .split(/\s+/);
    return Number(low) > 11_000 ? Number(low) : 32_768;
  } catch {
    return 32_768;
  }
}

function listensOn(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.unref();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/**
 * A free port on 127.0.0.1 below the kernel's ephemeral range, for a service that is killed and
 * started again on the same port. While it is down, a port from `freePort` could be handed to
 * another test's service or taken as the source port of a reconnecting client (which can then
 * connect to itself); below the range the kernel never hands it out on its own.
 */
export async function stablePort(): Promise<number> {
  const floor = ephemeralFloor();
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = 10_000 + Math.floor(Math.random() * (floor - 10_000));
    if (await listensOn(port)) return port;
  }
  throw new Error("no free port below the ephemeral range");
}

/** Asks the kernel for a free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === "object") resolve(address.port);
        else reject(new Error("could not get a free port"));
      });
    });
  });
}
