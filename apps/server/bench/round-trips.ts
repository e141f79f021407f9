// Where a dispatch and an event batch spend their time: counts and times every MongoDB command
// and Redis command one in-process server sends for each, and prints one dispatch's timeline.
// `pnpm --filter @gadget/server exec tsx bench/round-trips.ts` (loopback, private services).
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { agentEvent } from "@gadget/protocol";
import { findRepoRoot, startServices } from "@gadget/services";
import { registerDrone, ScriptedDrone, setupWorkspace, signup } from "@gadget/testkit/wire";
import { Redis } from "ioredis";
import { createGadgetServer } from "../src/server.ts";
import { testConfig } from "../src/testing/test-server.ts";

interface Operation {
  kind: string;
  start: number;
  end: number;
}

const now = () => performance.now();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
let recorded: Operation[] = [];
let recording = false;

/** Times `run` as one operation of `kind` while recording. */
async function timed<T>(kind: string, run: () => Promise<T>): Promise<T> {
  if (!recording) return run();
  const operation = { kind, start: now(), end: 0 };
  recorded.push(operation);
  try {
    return await run();
  } finally {
    operation.end = now();
  }
}

/** Wraps the driver's collection methods and cursors, and ioredis's command sender. */
function instrument(): void {
  const mongodb = createRequire(createRequire(import.meta.url).resolve("mongoose"))("mongodb");
  const collection = mongodb.Collection.prototype as Record<
    string,
    (...args: unknown[]) => unknown
  >;
  // insertMany calls bulkWrite: counted once, as insertMany.
  for (const name of ["findOne", "insertOne", "insertMany", "updateOne", "countDocuments"]) {
    const original = collection[name]!;
    collection[name] = function (this: { collectionName: string }, ...args: unknown[]) {
      return timed(`mongo ${this.collectionName}.${name}`, () =>
        Promise.resolve(original.apply(this, args)),
      );
    };
  }
  const cursor = mongodb.FindCursor.prototype as Record<string, (...args: unknown[]) => unknown>;
  const toArray = cursor.toArray!;
  cursor.toArray = function (this: { namespace: { collection: string } }, ...args: unknown[]) {
    return timed(`mongo ${this.namespace.collection}.find`, () =>
      Promise.resolve(toArray.apply(this, args)),
    );
  };
  const blocking = new Set(["subscribe", "psubscribe", "bzpopmin", "bzpopmax"]);
  const sendCommand = Redis.prototype.sendCommand;
  Redis.prototype.sendCommand = function (
    this: Redis,
    ...args: Parameters<typeof sendCommand>
  ): ReturnType<typeof sendCommand> {
    const result = sendCommand.apply(this, args);
    const command = args[0] as unknown as {
      name: string;
      args: unknown[];
      promise: Promise<unknown>;
    };
    if (recording && !blocking.has(command.name)) {
      const operation = {
        kind: `redis ${command.name}${scriptKey(command)}`,
        start: now(),
        end: 0,
      };
      recorded.push(operation);
      const done = () => {
        operation.end = now();
      };
      command.promise.then(done, done);
    }
    return result;
  };
}

/** A script's first key with ids and hashes blanked (which script ran), e.g. ` gadget:turn-seq:*`. */
function scriptKey(command: { name: string; args: unknown[] }): string {
  if (command.name !== "eval" && command.name !== "evalsha") return "";
  const key = Number(command.args[1]) > 0 ? String(command.args[2]) : "(no keys)";
  return ` ${key.replace(/[0-9a-f]{24}|[0-9a-f-]{36}/g, "*")}`;
}

interface Sample {
  start: number;
  end: number;
  operations: Operation[];
}

function summarize(title: string, samples: Sample[]): void {
  const byKind = new Map<string, { count: number; ms: number }>();
  let total = 0;
  for (const sample of samples) {
    total += sample.end - sample.start;
    for (const operation of sample.operations) {
      const entry = byKind.get(operation.kind) ?? { count: 0, ms: 0 };
      entry.count++;
      entry.ms += operation.end - operation.start;
      byKind.set(operation.kind, entry);
    }
  }
  const mongo = [...byKind].filter(([kind]) => kind.startsWith("mongo"));
  const redis = [...byKind].filter(([kind]) => kind.startsWith("redis"));
  const perSample = (entries: typeof mongo) =>
    (entries.reduce((sum, [, entry]) => sum + entry.count, 0) / samples.length).toFixed(1);
  console.log(
    `\n## ${title}: ${samples.length} samples, mean ${(total / samples.length).toFixed(1)} ms; ` +
      `${perSample(mongo)} MongoDB and ${perSample(redis)} Redis commands each`,
  );
  for (const [kind, { count, ms }] of [...byKind].sort((a, b) => b[1].ms - a[1].ms)) {
    console.log(
      `${kind.padEnd(40)} ${(count / samples.length).toFixed(2).padStart(6)} per sample, ${(ms / count).toFixed(2)} ms each`,
    );
  }
}

async function main(): Promise<void> {
  instrument();
  const dataDir = await mkdtemp(path.join(tmpdir(), "gadget-round-trips-"));
  const services = await startServices({ rootDir: findRepoRoot(), dataDir });
  const server = await createGadgetServer(
    testConfig(
      {
        mongoUrl: services.mongoUrl,
        redisUrl: services.redisUrl,
        sweepIntervalMs: 2_000,
        workOrderAckTimeoutMs: 10_000,
        turnUpdateIntervalMs: 250,
        droneGraceMs: 60_000,
      },
      `round_trips_${randomUUID().slice(0, 6)}`,
    ),
  );
  const drones: ScriptedDrone[] = [];
  try {
    const user = await signup(server.url, "round-trips");
    const workspace = await setupWorkspace(user);
    const arrivals = new Map<string, (at: number) => void>();
    for (let index = 0; index < 10; index++) {
      const registered = await registerDrone(user, { name: `d${index}`, capacity: 8 });
      drones.push(
        await ScriptedDrone.connect({
          url: server.url,
          droneId: registered.droneId,
          credential: registered.credential,
          capacity: 8,
          heartbeatMs: 5_000,
          onWorkOrder: (order) => {
            arrivals.get(order.prompt)?.(now());
            return { ok: true };
          },
        }),
      );
    }
    await sleep(500);

    const dispatches: Sample[] = [];
    let turnId = "";
    for (let index = 0; index < 30; index++) {
      const prompt = `round trip ${index}`;
      const arrived = new Promise<number>((resolve) => arrivals.set(prompt, resolve));
      // A session per turn (made before the clock starts): the turns stay running, and a
      // session's next turn would wait for them on the server.
      const session = await user.post(`/api/projects/${workspace.projectId}/sessions`, {
        name: `round trip ${index}`,
      });
      recorded = [];
      recording = true;
      const start = now();
      const posted = await user.post(`/api/sessions/${session.body.session._id}/turns`, {
        prompt,
        providerId: workspace.providerId,
      });
      const answered = now();
      const end = await arrived;
      await sleep(100);
      recording = false;
      turnId = posted.body.turn._id;
      if (index < 5) continue; // warm-up
      const operations = recorded.filter((operation) => operation.start < end);
      dispatches.push({ start, end, operations });
      if (index === 29) {
        console.log(
          `timeline of one dispatch (202 after ${(answered - start).toFixed(1)} ms, work order at the drone after ${(end - start).toFixed(1)} ms):`,
        );
        for (const operation of operations) {
          console.log(
            `${(operation.start - start).toFixed(1).padStart(7)} → ${(operation.end - start).toFixed(1).padStart(7)}  ${operation.kind}`,
          );
        }
      }
    }
    summarize("dispatch (POST turn → work order at the drone)", dispatches);

    const owner = drones.find((drone) => drone.running.has(turnId))!;
    const batches: Sample[] = [];
    for (let index = 0; index < 40; index++) {
      recorded = [];
      recording = true;
      const start = now();
      await owner.stream(
        turnId,
        Array.from({ length: 5 }, () => agentEvent("token", { text: "x" })),
      );
      const end = now();
      await sleep(30);
      recording = false;
      if (index >= 2) batches.push({ start, end, operations: [...recorded] });
    }
    summarize("event batch of 5 tokens (drone emit → ack), with what follows it", batches);
  } finally {
    for (const drone of drones) drone.close();
    await server.close();
    await services.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
