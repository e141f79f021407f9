// (b)'s parts: 20 clients running one attacker each for 30 s while the server's memory is
// sampled, and the attackers of findings 1, 3, 4 and 5.
import { readdir, rm } from "node:fs/promises";
import { createServer, get as httpGet, type ServerResponse } from "node:http";
import path from "node:path";
import { droneAuthorization } from "@gadget/protocol";
import { now, rssMb, sleep } from "@gadget/testkit/measure";
import type { Redis } from "ioredis";
import { io as connectClient, type Socket } from "socket.io-client";
import type { ServerProcess } from "../../src/testing/server-process.ts";
import {
  attackClients,
  attackSeconds,
  type Build,
  type DroneWire,
  type Env,
  providerBytesPerSecond,
  redisCapMb,
  redisUsedMb,
  rssCapMb,
  type User,
} from "./harness.ts";

interface Attack {
  /** Whether the attack should go on (false once the time is up or a cap was passed). */
  going(): boolean;
  /** Counts one outcome of an attacker's request. */
  tally(outcome: string): void;
}

export interface AttackResult {
  startMb: number;
  maxMb: number;
  endMb: number;
  stoppedEarly: string | null;
  outcomes: Map<string, number>;
  redis: { beforeMb: number; maxMb: number; afterMb: number } | null;
  /** The server's V8 heap in use before and after the attack (null if /metrics did not answer). */
  heap: { beforeMb: number | null; afterMb: number | null };
  liveSubscriptions: number | null;
}

/**
 * Runs `attacker` on `attackClients` clients for `attackSeconds` while sampling the server's RSS
 * (and Redis's memory when given) every second.
 */
export async function underAttack(
  env: Env,
  server: ServerProcess,
  redis: Redis | null,
  attacker: (client: number, attack: Attack) => Promise<void>,
): Promise<AttackResult> {
  const pid = server.child.pid!;
  // The collection's heap snapshot grows RSS by itself, so the start is read after it: both
  // builds' RSS figures start from a process that has written one snapshot.
  const heapBefore = await collectedHeapMb(server, env.diagnosticDir);
  await sleep(500);
  const startMb = await rssMb(pid);
  const samples = [startMb];
  const deadline = now() + attackSeconds * 1000;
  let stoppedEarly: string | null = null;
  const redisBefore = redis ? await redisUsedMb(redis) : Number.NaN;
  const redisSamples = [redisBefore];
  const sampler = setInterval(() => {
    void (async () => {
      try {
        const rss = await rssMb(pid);
        samples.push(rss);
        if (rss > rssCapMb) stoppedEarly ??= `stopped early: RSS past ${rssCapMb} MiB`;
      } catch {
        stoppedEarly ??= "the server exited";
      }
      if (redis) {
        const used = await redisUsedMb(redis).catch(() => Number.NaN);
        redisSamples.push(used);
        if (used > redisCapMb) stoppedEarly ??= `stopped early: Redis past ${redisCapMb} MiB`;
      }
    })();
  }, 1_000);
  const outcomes = new Map<string, number>();
  const attack: Attack = {
    going: () => stoppedEarly === null && now() < deadline,
    tally: (outcome) => outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1),
  };
  try {
    await Promise.all(
      Array.from({ length: attackClients }, async (_, client) => {
        while (attack.going()) {
          try {
            await attacker(client, attack);
          } catch (error) {
            attack.tally(`error: ${shortReason(error)}`);
            await sleep(50);
          }
        }
      }),
    );
  } finally {
    clearInterval(sampler);
  }
  // Before the second snapshot, which would grow RSS again.
  const endMb = await rssMb(pid).catch(() => Number.NaN);
  samples.push(endMb);
  const heapAfter = await collectedHeapMb(server, env.diagnosticDir);
  console.error(
    `  RSS each second (MiB): ${samples.map((sample) => sample.toFixed(0)).join(" ")}; V8 heap used ${heapBefore?.toFixed(0) ?? "?"} → ${heapAfter?.toFixed(0) ?? "?"} MiB`,
  );
  const afterMb = redis ? await redisUsedMb(redis) : Number.NaN;
  redisSamples.push(afterMb);
  return {
    startMb,
    maxMb: Math.max(...samples.filter(Number.isFinite)),
    endMb,
    stoppedEarly,
    outcomes,
    redis: redis
      ? {
          beforeMb: redisBefore,
          maxMb: Math.max(...redisSamples.filter(Number.isFinite)),
          afterMb,
        }
      : null,
    heap: { beforeMb: heapBefore, afterMb: heapAfter },
    liveSubscriptions: null,
  };
}

function shortReason(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } })?.cause;
  const text = cause?.code ?? cause?.message ?? (error as Error)?.message ?? String(error);
  return text.slice(0, 60);
}

/** "200 ×600, 429 ×5,000": what the attackers heard, most frequent first. */
export function outcomeSummary(outcomes: Map<string, number>): string {
  return [...outcomes]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 4)
    .map(([outcome, count]) => `${outcome} ×${count.toLocaleString("en")}`)
    .join(", ");
}

/**
 * "429 rate_limited", or for a provider check "200: <its message>" (the provider's address
 * blanked): what an attacker heard, short enough to count.
 */
async function describeAnswer(response: Response, providerUrl?: string): Promise<string> {
  const text = await response.text();
  let body: { error?: { code?: string }; message?: string } = {};
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    // Not JSON: the status alone.
  }
  if (body.error?.code) return `${response.status} ${body.error.code}`;
  if (body.message) {
    const message = providerUrl ? body.message.replaceAll(providerUrl, "<provider>") : body.message;
    return `${response.status}: "${message.slice(0, 50)}"`;
  }
  return String(response.status);
}

/** A loopback "provider" whose `/models` is an endless JSON model list, streamed at a bounded rate. */
export async function startEndlessProvider(): Promise<{ baseUrl: string; close(): Promise<void> }> {
  const chunk = Buffer.from(
    Array.from({ length: 1000 }, (_, index) => `{"id":"model-${index}","object":"model"},`).join(
      "",
    ),
  );
  const ticksPerSecond = 20;
  const chunksPerTick = Math.max(
    1,
    Math.round(providerBytesPerSecond / ticksPerSecond / chunk.length),
  );
  const open = new Set<ServerResponse>();
  const server = createServer((request, response) => {
    if (!request.url?.endsWith("/models")) {
      response.writeHead(404).end();
      return;
    }
    // No content-length: the build before only checked the size when one was sent.
    response.writeHead(200, { "content-type": "application/json" });
    response.write('{"object":"list","data":[');
    open.add(response);
    const timer = setInterval(() => {
      // A tick's worth at a time; skipped while a reader is that far behind (bounded here).
      if (response.writableLength > chunksPerTick * chunk.length) return;
      for (let index = 0; index < chunksPerTick; index++) response.write(chunk);
    }, 1000 / ticksPerSecond);
    // Endless for the caller, bounded here: no answer outlives a minute.
    const limit = setTimeout(() => response.destroy(), 60_000);
    response.on("close", () => {
      clearInterval(timer);
      clearTimeout(limit);
      open.delete(response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    close: async () => {
      for (const response of open) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Finding 1: provider checks against a provider that never stops answering. */
export function providerCheckAttacker(url: string, users: User[], baseUrl: string) {
  return async (client: number, attack: Attack) => {
    const user = users[client % users.length]!;
    const response = await fetch(`${url}/api/providers/check`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${user.token}` },
      body: JSON.stringify({ baseUrl, apiKey: "sk-bench" }),
      signal: AbortSignal.timeout(30_000),
    });
    attack.tally(await describeAnswer(response, baseUrl));
    // Refused (bounded concurrency, 30 a minute): a moment before the next, not a spin.
    if (response.status === 429) await sleep(100);
  };
}

/** Finding 3: unauthenticated logins whose email is 10 MiB, a new one each time. */
export function bigLoginAttacker(url: string) {
  const local = "a".repeat(10 * 1024 * 1024);
  let sequence = 0;
  return async (client: number, attack: Attack) => {
    const body = `{"email":"${client}-${sequence++}-${local}@example.com","password":"wrong password"}`;
    const response = await fetch(`${url}/api/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
      signal: AbortSignal.timeout(30_000),
    });
    attack.tally(await describeAnswer(response));
  };
}

/** Finding 4: unauthenticated handshakes carrying 15 MiB, on /ide and on the drones' path. */
export function bigHandshakeAttacker(url: string, wire: DroneWire) {
  const big = "c".repeat(15 * 1024 * 1024);
  let sequence = 0;
  return async (_client: number, attack: Attack) => {
    const drones = sequence++ % 2 === 1;
    const socket: Socket = connectClient(`${url}${drones ? "/drones" : "/ide"}`, {
      path: drones ? wire.path : "/socket.io/",
      // An attacker who read the protocol: a well-formed header with a made-up drone.
      ...(drones && wire.authorizationHeader
        ? { extraHeaders: { authorization: droneAuthorization("0".repeat(24), "gdc_made_up") } }
        : {}),
      auth: drones
        ? {
            droneId: "0".repeat(24),
            credential: big,
            protocolVersion: wire.protocolVersion,
            sandbox: { kind: "none", version: null, network: "host" },
          }
        : { token: big },
      transports: ["websocket"],
      reconnection: false,
      forceNew: true,
      timeout: 10_000,
    });
    const outcome = await new Promise<string>((resolve) => {
      const timer = setTimeout(() => resolve("no answer in 10 s"), 10_000);
      const settle = (text: string) => {
        clearTimeout(timer);
        resolve(text);
      };
      socket.once("connect", () => settle("connected"));
      socket.once("connect_error", (error) => settle(`refused (${error.message.slice(0, 30)})`));
      socket.once("disconnect", (reason) => settle(`closed (${reason})`));
    });
    socket.close();
    attack.tally(`${drones ? "drones" : "ide"} ${outcome}`);
  };
}

/**
 * Finding 5: /ide sockets that subscribe twice to a turn and leave at once, and SSE streams of
 * the turn aborted within a few milliseconds.
 */
export function leakySubscriberAttacker(url: string, token: string, turnId: string) {
  let sequence = 0;
  return async (_client: number, attack: Attack) => {
    if (sequence++ % 2 === 0) {
      const socket: Socket = connectClient(`${url}/ide`, {
        auth: { token },
        transports: ["websocket"],
        reconnection: false,
        forceNew: true,
        timeout: 10_000,
      });
      const connected = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), 10_000);
        socket.once("connect", () => {
          clearTimeout(timer);
          resolve(true);
        });
        socket.once("connect_error", () => {
          clearTimeout(timer);
          resolve(false);
        });
      });
      if (connected) {
        socket.emit("subscribe", { turnId, after: 0 }, () => undefined);
        socket.emit("subscribe", { turnId, after: 0 }, () => undefined);
        await sleep(Math.random() * 5);
      }
      socket.close();
      attack.tally(connected ? "socket subscribed twice, left" : "socket refused");
      return;
    }
    await new Promise<void>((resolve) => {
      const request = httpGet(`${url}/api/turns/${turnId}/stream`, {
        headers: { authorization: `Bearer ${token}` },
        agent: false,
      });
      const abort = setTimeout(() => request.destroy(), Math.random() * 4);
      request.on("response", (response) => {
        clearTimeout(abort);
        response.destroy();
      });
      request.on("error", () => undefined);
      request.on("close", () => {
        clearTimeout(abort);
        resolve();
      });
    });
    attack.tally("SSE aborted");
  };
}

/**
 * The server's V8 heap in use after a full collection (prom-client's default metrics), or null if
 * it cannot be read. The snapshot is written on the server's main thread, so `/metrics` answers
 * once it is done; the file is deleted.
 */
async function collectedHeapMb(
  server: ServerProcess,
  diagnosticDir: string,
): Promise<number | null> {
  process.kill(server.child.pid!, "SIGUSR2");
  await sleep(200);
  try {
    const metrics = await fetch(`${server.url}/metrics`, {
      signal: AbortSignal.timeout(60_000),
    }).then((response) => response.text());
    const match = /^gadget_process_nodejs_heap_size_used_bytes ([\d.e+]+)/m.exec(metrics);
    return match ? Number(match[1]) / 1024 / 1024 : null;
  } catch {
    return null;
  } finally {
    for (const file of await readdir(diagnosticDir)) {
      if (file.endsWith(".heapsnapshot")) await rm(path.join(diagnosticDir, file), { force: true });
    }
  }
}

/** The server's `gadget_live_subscriptions` gauge, or null where there is none (the build before). */
export async function liveSubscriptions(url: string): Promise<number | null> {
  const metrics = await fetch(`${url}/metrics`).then((response) => response.text());
  const match = /^gadget_live_subscriptions (\d+)/m.exec(metrics);
  return match ? Number(match[1]) : null;
}

export interface Finding {
  id: number;
  benchmark: string;
  measuresRedis?: boolean;
  attacker(build: Build, server: ServerProcess): (client: number, attack: Attack) => Promise<void>;
  /** After the attack (the server still up): extra figures. */
  after?(server: ServerProcess, result: AttackResult): Promise<void>;
}
