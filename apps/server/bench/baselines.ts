// Raw baselines the server's figures stand beside: a bare Socket.IO emitWithAck and a BullMQ
// job round trip, measured in the same run.
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { now } from "@gadget/testkit/measure";
import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
import { Server } from "socket.io";
import { io as connectClient } from "socket.io-client";

export async function bareSocketIo(): Promise<{ url: string; io: Server; close(): Promise<void> }> {
  const http = createServer();
  const io = new Server(http);
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const address = http.address();
  const url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  return { url, io, close: () => new Promise((resolve) => io.close(() => resolve())) };
}

export async function baselineEmitWithAck(samples: number): Promise<number[]> {
  const bare = await bareSocketIo();
  const client = connectClient(`${bare.url}/drones`, { transports: ["websocket"], forceNew: true });
  client.on("work_order", (_order: unknown, ack: (answer: unknown) => void) => ack({ ok: true }));
  const socket = await new Promise<import("socket.io").Socket>((resolve) =>
    bare.io.of("/drones").once("connection", resolve),
  );
  const payload = {
    turnId: "x".repeat(24),
    prompt: "hello",
    context: [],
    provider: { apiKey: "k" },
  };
  const latencies: number[] = [];
  for (let index = 0; index < samples; index++) {
    const start = now();
    await socket.timeout(5000).emitWithAck("work_order", payload);
    latencies.push(now() - start);
  }
  client.close();
  await bare.close();
  return latencies;
}

export async function baselineBullmq(redisUrl: string, samples: number): Promise<number[]> {
  const prefix = `bench_bare_${randomUUID().slice(0, 8)}`;
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const workerConnection = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const queue = new Queue("bare", { connection, prefix });
  const started = new Map<string, (at: number) => void>();
  const worker = new Worker(
    "bare",
    async (job) => {
      started.get(job.id ?? "")?.(now());
    },
    { connection: workerConnection, prefix, concurrency: 8 },
  );
  await worker.waitUntilReady();
  const latencies: number[] = [];
  for (let index = 0; index < samples; index++) {
    const id = `job-${index}`;
    const arrived = new Promise<number>((resolve) => started.set(id, resolve));
    const start = now();
    await queue.add(
      "bare",
      { turnId: id },
      { jobId: id, removeOnComplete: true, removeOnFail: true },
    );
    latencies.push((await arrived) - start);
  }
  await worker.close();
  await queue.obliterate({ force: true });
  await queue.close();
  await connection.quit();
  await workerConnection.quit();
  return latencies;
}
