// What the hardening benchmarks share: the two builds (this one, and the one before from a git
// worktree), a drone of either build's wire, the users and turns each build is measured with,
// and the table they fill.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { readdir, symlink } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import {
  agentEvent,
  type DroneClientToServerEvents,
  type DroneServerToClientEvents,
  droneAuthorization,
  type TurnEventBatchInput,
} from "@gadget/protocol";
import { databaseUrl } from "@gadget/services";
import { now, pool } from "@gadget/testkit/measure";
import { type ApiClient, registerDrone, setupWorkspace, signup } from "@gadget/testkit/wire";
import type { Redis } from "ioredis";
import { io as connectClient, type Socket } from "socket.io-client";
import { type ServerProcess, startServerProcess } from "../../src/testing/server-process.ts";

/**
 * The baseline build: main before the sandbox, outage and hardening work ("tidy: the FerretDB
 * pushdown writes an equality's conditions once…"), the server the attacker's pass was made on.
 */
export const beforeCommit = "ec0dd41c23708a4325c2abe70f0275f93fb38470";
export const attackClients = 20;
export const attackSeconds = Number(process.env.BENCH_ATTACK_SECONDS ?? 30);
/**
 * An attack stops early when the server passes this RSS (or Redis this much memory): the build
 * before hardening grows without bound, and the machine is shared.
 */
export const rssCapMb = 4096;
export const redisCapMb = 2048;
/** Finding 1's provider streams this fast per connection: the old build buffers 10 s of it. */
export const providerBytesPerSecond = 8 * 1024 * 1024;
/** Rounds of (a): each round measures every build in turn, the order flipping each round. */
export const overheadRounds = 10;
export const perRound = 30;
export const warmup = 20;

export const run = promisify(execFile);

interface Row {
  benchmark: string;
  measure: string;
  current: string;
  before: string;
  target: string;
}
export const rows: Row[] = [];
export const readings: string[] = [];

export const mib = (value: number) => value.toFixed(0);

export async function redisUsedMb(redis: Redis): Promise<number> {
  const info = await redis.info("memory");
  return Number(/used_memory:(\d+)/.exec(info)?.[1] ?? Number.NaN) / 1024 / 1024;
}

/** How a build's drones connect: the hardened one on its own path with the credential header. */
export interface DroneWire {
  path: string;
  protocolVersion: number;
  authorizationHeader: boolean;
}

export interface Build {
  label: "this build" | "before";
  /** apps/server directory served from; undefined: this tree. */
  serverDirectory: string | undefined;
  drone: DroneWire;
  /** Database and Redis prefix, kept across the build's restarts (its users stay signed up). */
  name: string;
  fixtures?: Fixtures;
}

export type User = ApiClient & { userId: string };
type Workspace = Awaited<ReturnType<typeof setupWorkspace>>;

interface Fixtures {
  /** Users whose turns (a) creates and cancels; no drones, so turns stay queued until cancelled. */
  turnUsers: Array<{ user: User; workspace: Workspace }>;
  /** The user whose drone streams (a)'s event batches. */
  batch: { user: User; workspace: Workspace; droneId: string; credential: string };
  /** Finding 1's attackers: users without drones, so the server checks providers itself. */
  checkUsers: User[];
  /** Finding 5's victim: a queued turn of a user without drones. */
  watched: { user: User; turnId: string };
}

export interface Env {
  mongoUrl: string;
  redisUrl: string;
  /** Where a server writes the heap snapshot that forces its full collection (then deleted). */
  diagnosticDir: string;
}

export function startBuild(env: Env, build: Build): Promise<ServerProcess> {
  return startServerProcess(
    {
      MONGO_URL: databaseUrl(env.mongoUrl, build.name),
      REDIS_URL: env.redisUrl,
      GADGET_REDIS_PREFIX: build.name,
      LOG_LEVEL: "error",
      // Finding 1's provider is on loopback; the build before has no outbound policy at all.
      GADGET_ALLOW_PRIVATE_NETWORK: "true",
    },
    90_000,
    // SIGUSR2 writes a heap snapshot, which first collects all garbage: the heap figures below
    // are what a server still holds, not what its collector had not reached yet.
    ["--heapsnapshot-signal=SIGUSR2", `--diagnostic-dir=${env.diagnosticDir}`],
    build.serverDirectory,
  );
}

/**
 * A worktree of `beforeCommit` that runs without installing: the root node_modules is a link to
 * this tree's, and each package's node_modules (pnpm's relative links only) is copied, so
 * `@gadget/*` resolve to the worktree's own packages. Null when git cannot make one.
 */
export async function prepareBeforeTree(
  repoRoot: string,
  base: string,
): Promise<{ serverDirectory: string; remove(): Promise<void> } | null> {
  const tree = path.join(base, "before");
  try {
    await run("git", ["-C", repoRoot, "worktree", "add", "--detach", tree, beforeCommit]);
  } catch (error) {
    console.error(`git worktree add failed (shallow clone?): ${(error as Error).message}`);
    return null;
  }
  const remove = async () => {
    await run("git", ["-C", repoRoot, "worktree", "remove", "--force", tree]).catch(
      (error: unknown) => console.error(`git worktree remove: ${(error as Error).message}`),
    );
  };
  try {
    await symlink(path.join(repoRoot, "node_modules"), path.join(tree, "node_modules"));
    for (const group of ["apps", "packages"]) {
      for (const entry of await readdir(path.join(repoRoot, group))) {
        const modules = path.join(repoRoot, group, entry, "node_modules");
        const target = path.join(tree, group, entry);
        if (existsSync(modules) && existsSync(target)) await run("cp", ["-a", modules, target]);
      }
    }
  } catch (error) {
    await remove();
    throw error;
  }
  return { serverDirectory: path.join(tree, "apps", "server"), remove };
}

type DroneSocket = Socket<DroneServerToClientEvents, DroneClientToServerEvents>;

/** A drone that takes every work order and streams what it is told; nothing else. */
export class BenchDrone {
  /** Turns accepted, with the seq their next event gets. */
  readonly nextSeq = new Map<string, number>();
  private readonly waiters = new Map<string, () => void>();
  private readonly heartbeat: NodeJS.Timeout;

  private constructor(readonly socket: DroneSocket) {
    socket.on("work_order", (order, ack) => {
      this.nextSeq.set(order.turnId, order.nextSeq);
      ack({ ok: true });
      this.waiters.get(order.turnId)?.();
    });
    socket.on("turn_cancel", (_control, ack) => ack({ ok: true }));
    // Keeps the leases of its turns while (a) runs.
    this.heartbeat = setInterval(() => {
      void socket
        .timeout(5_000)
        .emitWithAck("heartbeat", { activeTurns: [...this.nextSeq.keys()], workspaces: [] })
        .catch(() => undefined);
    }, 5_000);
  }

  static connect(
    url: string,
    wire: DroneWire,
    credentials: { droneId: string; credential: string },
  ): Promise<BenchDrone> {
    const socket: DroneSocket = connectClient(`${url}/drones`, {
      path: wire.path,
      ...(wire.authorizationHeader
        ? {
            extraHeaders: {
              authorization: droneAuthorization(credentials.droneId, credentials.credential),
            },
          }
        : {}),
      auth: {
        ...credentials,
        protocolVersion: wire.protocolVersion,
        capacity: 4,
        workspaces: [],
        activeTurns: [],
        hostname: "bench-host",
        platform: "test",
        version: "0.0.0-bench",
        sandbox: { kind: "none", version: null, network: "host" },
      },
      transports: ["websocket"],
      reconnection: false,
      forceNew: true,
    });
    return new Promise((resolve, reject) => {
      socket.once("connect", () => resolve(new BenchDrone(socket)));
      socket.once("connect_error", (error) => {
        socket.close();
        reject(new Error(`drone refused: ${error.message}`));
      });
    });
  }

  /** Resolves when the work order of `turnId` has been accepted. */
  accepted(turnId: string, timeoutMs = 10_000): Promise<void> {
    if (this.nextSeq.has(turnId)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no work order for ${turnId}`)), timeoutMs);
      this.waiters.set(turnId, () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** Sends one batch of `count` token events (or `done`) and returns the time to its ack. */
  async batch(turnId: string, count: number, done = false): Promise<number> {
    const first = this.nextSeq.get(turnId) ?? 1;
    const events = Array.from({ length: count }, (_, index) => ({
      ...(done && index === count - 1
        ? agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 })
        : agentEvent("token", { text: `token ${first + index} of a measured answer ` })),
      seq: first + index,
    }));
    this.nextSeq.set(turnId, first + count);
    const batch: TurnEventBatchInput = { turnId, events };
    const started = now();
    const answer = await this.socket.timeout(10_000).emitWithAck("turn_events", batch);
    const elapsed = now() - started;
    if (!answer.ok) throw new Error(`batch refused: ${answer.error.message}`);
    return elapsed;
  }

  close(): void {
    clearInterval(this.heartbeat);
    this.socket.close();
  }
}

export async function prepareFixtures(server: ServerProcess): Promise<Fixtures> {
  const url = server.url;
  // Few sign-ups: this build hashes passwords at scrypt N=2^17, and an address may sign up 50
  // times a minute on either build.
  const turnUsers = await pool([0, 1, 2, 3], 2, async (index) => {
    const user = await signup(url, `turns${index}`);
    return { user, workspace: await setupWorkspace(user) };
  });
  const batchUser = await signup(url, "batches");
  const batchWorkspace = await setupWorkspace(batchUser);
  const drone = await registerDrone(batchUser, { name: "bench", capacity: 4 });
  const watcher = await signup(url, "watched");
  const watcherWorkspace = await setupWorkspace(watcher);
  const posted = await watcher.post(`/api/sessions/${watcherWorkspace.sessionId}/turns`, {
    prompt: "a turn to watch",
    providerId: watcherWorkspace.providerId,
  });
  if (posted.status !== 202) throw new Error(`POST turn: ${posted.status}`);
  const more = await pool(
    Array.from({ length: attackClients - turnUsers.length - 1 }, (_, index) => index),
    2,
    (index) => signup(url, `checks${index}`),
  );
  return {
    turnUsers,
    batch: { user: batchUser, workspace: batchWorkspace, ...drone },
    checkUsers: [...turnUsers.map(({ user }) => user), watcher, ...more],
    watched: { user: watcher, turnId: String(posted.body.turn._id) },
  };
}
