// Drone benchmarks: workspace preparation (cold clone vs warm fetch) of a 5,000-file repository,
// and event throughput through the journal with acknowledgements vs a bare Socket.IO emit loop.
// Baselines run in the same process and the same minute, so ratios hold on a noisy machine.
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  agentEvent,
  DRONE_SOCKET_PATH,
  DRONES_NAMESPACE,
  droneAuthorization,
  PROTOCOL_VERSION,
} from "@gadget/protocol";
import { startTestServer } from "@gadget/server/testing";
import { findRepoRoot, startServices } from "@gadget/services";
import { median } from "@gadget/testkit/measure";
import { registerDrone, setupWorkspace, signup } from "@gadget/testkit/wire";
import { type DroneSocket, EventJournal, EventSender, prepareWorkspace } from "gadget-drone";
import { Server } from "socket.io";
import { io } from "socket.io-client";

const gitEnv = {
  ...process.env,
  GIT_AUTHOR_NAME: "Bench",
  GIT_AUTHOR_EMAIL: "bench@example.com",
  GIT_COMMITTER_NAME: "Bench",
  GIT_COMMITTER_EMAIL: "bench@example.com",
};
const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", args, { cwd, env: gitEnv, stdio: ["ignore", "pipe", "pipe"] }).toString();

async function time(work: () => Promise<unknown> | unknown): Promise<number> {
  const started = performance.now();
  await work();
  return performance.now() - started;
}

/** A bare repository with 5,000 files of ~1 KiB in 50 folders. */
async function createLargeRemote(root: string): Promise<string> {
  const scratch = path.join(root, "scratch");
  const bare = path.join(root, "large.git");
  await mkdir(scratch, { recursive: true });
  git(root, "init", "-q", "--bare", "--initial-branch=main", bare);
  git(scratch, "init", "-q", "--initial-branch=main");
  for (let folder = 0; folder < 50; folder++) {
    const directory = path.join(scratch, `module-${folder}`);
    await mkdir(directory, { recursive: true });
    for (let file = 0; file < 100; file++) {
      const body = `export const value${file} = ${folder * 100 + file};\n`.repeat(30);
      await writeFile(path.join(directory, `file-${file}.ts`), body);
    }
  }
  git(scratch, "add", "-A");
  git(scratch, "commit", "-q", "-m", "5,000 files");
  git(scratch, "remote", "add", "origin", bare);
  git(scratch, "push", "-q", "origin", "main");
  return bare;
}

async function workspaceBenchmark(rows: string[][]): Promise<void> {
  const root = await mkdtemp(path.join(tmpdir(), "gadget-drone-bench-"));
  try {
    const bare = await createLargeRemote(root);
    const cold: number[] = [];
    const coldBaseline: number[] = [];
    for (let round = 0; round < 3; round++) {
      const workspaceRoot = path.join(root, `ws-${round}`);
      cold.push(await time(() => prepareWorkspace({ workspaceRoot, slug: "large", gitUrl: bare })));
      coldBaseline.push(
        await time(() => git(root, "clone", "-q", bare, path.join(root, `raw-${round}`))),
      );
    }
    const warm: number[] = [];
    const warmBaseline: number[] = [];
    for (let round = 0; round < 7; round++) {
      warm.push(
        await time(() =>
          prepareWorkspace({ workspaceRoot: path.join(root, "ws-0"), slug: "large", gitUrl: bare }),
        ),
      );
      warmBaseline.push(await time(() => git(path.join(root, "raw-0"), "fetch", "-q", "origin")));
    }
    rows.push(
      [
        "prepare workspace, cold (clone 5,000 files)",
        fmt(median(cold)),
        "`git clone`",
        fmt(median(coldBaseline)),
        ratio(cold, coldBaseline),
        "",
      ],
      [
        "prepare workspace, warm (fetch, up to date)",
        fmt(median(warm)),
        "`git fetch`",
        fmt(median(warmBaseline)),
        ratio(warm, warmBaseline),
        "target < 300 ms",
      ],
    );
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

const eventCount = 20_000;

/** Baseline: a bare Socket.IO server counting events from a plain emit loop (no journal, no acks, no storage). */
async function bareEmitLoop(): Promise<number> {
  const http = createServer();
  const server = new Server(http);
  let received = 0;
  let done: () => void = () => {};
  const finished = new Promise<void>((resolve) => {
    done = resolve;
  });
  server.on("connection", (socket) => {
    socket.on("turn_events", () => {
      received++;
      if (received === eventCount) done();
    });
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const client = io(`http://127.0.0.1:${(http.address() as AddressInfo).port}`, {
    transports: ["websocket"],
  });
  await new Promise<void>((resolve) => client.once("connect", () => resolve()));
  const elapsed = await time(async () => {
    for (let seq = 1; seq <= eventCount; seq++) {
      client.emit("turn_events", { seq, type: "token", data: { text: "hello world " } });
    }
    await finished;
  });
  client.close();
  await server.close();
  return (eventCount / elapsed) * 1000;
}

/** The drone's path: journal on disk, ordered batches, acknowledged after the server stored them. */
async function droneToServer(mongoUrl: string, redisUrl: string): Promise<number> {
  const server = await startTestServer(
    { mongoUrl, redisUrl, droneGraceMs: 60_000 },
    `drone_bench_${process.pid}`,
  );
  try {
    const user = await signup(server.url, "bench");
    const workspace = await setupWorkspace(user);
    const { droneId, credential } = await registerDrone(user, { capacity: 1 });
    const socket: DroneSocket = io(`${server.url}${DRONES_NAMESPACE}`, {
      path: DRONE_SOCKET_PATH,
      extraHeaders: { authorization: droneAuthorization(droneId, credential) },
      transports: ["websocket"],
      auth: {
        droneId,
        credential,
        protocolVersion: PROTOCOL_VERSION,
        capacity: 1,
        sandbox: { kind: "none", version: null, network: "host" },
        activeTurns: [],
        workspaces: [],
      },
    });
    const order = new Promise<{ turnId: string; nextSeq: number }>((resolve) => {
      socket.on("work_order", (payload, ack) => {
        ack({ ok: true });
        resolve({ turnId: payload.turnId, nextSeq: payload.nextSeq });
      });
    });
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
      prompt: "bench",
      providerId: workspace.providerId,
    });
    const { turnId, nextSeq } = await order;
    const journal = await new EventJournal(
      await mkdtemp(path.join(tmpdir(), "gadget-journal-bench-")),
    ).open(turnId, nextSeq);
    const sender = new EventSender(socket, journal, { batchSize: 500 });
    const elapsed = await time(async () => {
      for (let index = 0; index < eventCount; index++) {
        journal.append(agentEvent("token", { text: "hello world " }));
        if (index % 100 === 0) sender.notify();
      }
      sender.notify();
      await sender.drained();
    });
    socket.close();
    return (eventCount / elapsed) * 1000;
  } finally {
    await server.close();
  }
}

const fmt = (ms: number) => ms.toFixed(1);
const ratio = (a: number[], b: number[]) => `${(median(a) / median(b)).toFixed(2)}×`;

const rows: string[][] = [];
const dataDir = await mkdtemp(path.join(tmpdir(), "gadget-drone-bench-services-"));
const services = await startServices({
  rootDir: findRepoRoot(),
  dataDir,
  mongoUrl: process.env.MONGO_URL,
  redisUrl: process.env.REDIS_URL,
});
try {
  await workspaceBenchmark(rows);
  const bare = await bareEmitLoop();
  const drone = await droneToServer(services.mongoUrl, services.redisUrl);
  rows.push([
    `drone → server events, journaled + acked + stored (${eventCount.toLocaleString()})`,
    `${Math.round(drone).toLocaleString()} events/s`,
    "bare Socket.IO emit loop",
    `${Math.round(bare).toLocaleString()} events/s`,
    `${(drone / bare).toFixed(2)}×`,
    "",
  ]);
} finally {
  await services.stop();
  await rm(dataDir, { recursive: true, force: true });
}

console.log(
  "\n| case | drone (ms) | baseline | baseline (ms) | ratio | note |\n|---|---:|---|---:|---:|---|",
);
for (const row of rows) console.log(`| ${row.join(" | ")} |`);
