// Turns that ride through outages, end to end: a real gadget-drone runs 7-pass turns against a
// server whose own FerretDB and Redis this file kills (SIGKILL) and brings back — the database on
// its data, Redis empty — for 3 s and for 30 s. Each turn must end `completed` with its answer,
// its events 1..N with no gap, no duplicate and one `done`, the model asked once per pass, and the
// drone still online. Plus: a turn queued while Redis restarts empty, and another user's drone
// flooding unstorable batches.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { agentEvent } from "@gadget/protocol";
import type { GadgetServer } from "@gadget/server";
import { startTestServer } from "@gadget/server/testing";
import {
  databaseUrl,
  findRepoRoot,
  type RestartableService,
  startRestartableMongo,
  startRestartableRedis,
} from "@gadget/services";
import { type ScriptedModel, startScriptedModel } from "@gadget/testkit";
import {
  type ApiClient,
  registerDrone,
  ScriptedDrone,
  setupWorkspace,
  signup,
  waitFor,
} from "@gadget/testkit/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createProjectSession,
  type DroneProcess,
  freshHome,
  registerWithCli,
  startCli,
  turnEvents,
  waitForDroneOnline,
  waitForTurn,
} from "./helpers.ts";

const passes = 7;

let base: string;
let mongo: RestartableService;
let redis: RestartableService;
let server: GadgetServer;
let model: ScriptedModel;
let user: ApiClient;
let home: string;
let drone: DroneProcess;
let config: string;

async function startDrone(): Promise<void> {
  drone = startCli(["--config", config], home, { GADGET_DRONE_HEARTBEAT_MS: "1000" });
  await waitForDroneOnline(user, "outage-drone", 30_000);
}

beforeAll(async () => {
  base = await mkdtemp(path.join(tmpdir(), "gadget-drone-outages-"));
  [mongo, redis] = await Promise.all([
    startRestartableMongo(findRepoRoot(), path.join(base, "mongo")),
    startRestartableRedis(path.join(base, "redis")),
  ]);
  server = await startTestServer({
    mongoUrl: databaseUrl(mongo.url, "drone_outages"),
    redisUrl: redis.url,
    droneGraceMs: 60_000,
    sweepIntervalMs: 500,
  });
  model = await startScriptedModel({ apiKey: "sk-x" });
  user = await signup(server.url, "outages");
  home = await freshHome();
  config = path.join(home, "drone.json");
  const registered = await registerWithCli(user, server.url, {
    name: "outage-drone",
    workspace: path.join(home, "workspaces"),
    config,
    home,
  });
  expect(registered.code, registered.stderr).toBe(0);
  await startDrone();
}, 180_000);

afterAll(async () => {
  drone?.child.kill("SIGKILL");
  await model?.close();
  await server?.close().catch(() => undefined);
  await Promise.all([mongo?.stop(), redis?.stop()]);
  if (base) await rm(base, { recursive: true, force: true });
});

/** Queues a 7-pass turn's replies: six commands that take a moment, then the answer. */
function scriptSevenPasses(answer: string): void {
  for (let pass = 1; pass < passes; pass++) {
    model.enqueue({
      toolCalls: [
        {
          name: "run_command",
          arguments: { command: `node -e "setTimeout(() => console.log('step ${pass}'), 400)"` },
        },
      ],
    });
  }
  model.enqueue({ text: answer });
}

/** Waits until the turn's stored events include pass `pass`'s status. */
async function untilPass(turnId: string, pass: number): Promise<void> {
  await waitFor(
    async () =>
      (await turnEvents(user, turnId)).some(
        (event) => event.type === "status" && event.data.pass === pass,
      ),
    30_000,
    `pass ${pass}`,
  );
}

/** What every outage must leave: a completed turn, a whole log, one model call per pass. */
async function expectWhole(turnId: string, answer: string, requestsBefore: number) {
  const turn = await waitForTurn(
    user,
    turnId,
    ["completed", "failed", "interrupted", "cancelled"],
    120_000,
  );
  expect(turn.status, JSON.stringify(turn.error)).toBe("completed");
  expect(turn.response).toBe(answer);
  const events = await turnEvents(user, turnId);
  expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
  expect(events.filter((event) => event.type === "done")).toHaveLength(1);
  expect(events.at(-1)?.type).toBe("done");
  expect(model.chatRequests.length - requestsBefore).toBe(passes);
  const drones = (await user.get("/api/drones")).body.drones as Array<{ status: string }>;
  expect(drones[0]?.status).toBe("online");
  return events;
}

async function outage(service: () => RestartableService, seconds: number, label: string) {
  const answer = `Done despite ${label}.`;
  const fixture = await createProjectSession(user, { name: label, modelUrl: model.baseUrl });
  const requestsBefore = model.chatRequests.length;
  scriptSevenPasses(answer);
  const created = await user.post(`/api/sessions/${fixture.sessionId}/turns`, {
    prompt: "Work through the steps",
    providerId: fixture.providerId,
  });
  const turnId = created.body.turn._id as string;
  await untilPass(turnId, 2);
  await service().kill();
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  await service().start();
  return expectWhole(turnId, answer, requestsBefore);
}

describe("outages in the middle of a 7-pass turn", () => {
  it("the database down for 3 s", async () => {
    await outage(() => mongo, 3, "the database down 3 s");
  }, 180_000);

  it("the database down for 30 s", async () => {
    await outage(() => mongo, 30, "the database down 30 s");
  }, 240_000);

  it("Redis down for 3 s, back empty", async () => {
    await outage(() => redis, 3, "Redis down 3 s");
  }, 180_000);

  it("Redis down for 30 s, back empty", async () => {
    await outage(() => redis, 30, "Redis down 30 s");
  }, 240_000);
});

describe("Redis back empty with a turn queued", () => {
  it("dispatches the queued turn as soon as a drone is there, not at the next repair", async () => {
    drone.child.kill("SIGTERM");
    await drone.exited;
    const fixture = await createProjectSession(user, { name: "Queued", modelUrl: model.baseUrl });
    model.enqueue({ text: "Ran after Redis came back." });
    const created = await user.post(`/api/sessions/${fixture.sessionId}/turns`, {
      prompt: "Say so",
      providerId: fixture.providerId,
    });
    const turnId = created.body.turn._id as string;
    await redis.kill();
    await redis.start();
    await startDrone();
    const started = Date.now();
    const turn = await waitForTurn(user, turnId, ["completed", "failed"], 30_000);
    expect(turn.status).toBe("completed");
    // The periodic repair is every 30 sweeps (15 s here); this must not wait for it.
    expect(Date.now() - started).toBeLessThan(10_000);
  }, 120_000);
});

describe("another user's hostile drone", () => {
  it("cannot end this turn by flooding batches the database cannot store", async () => {
    const stranger = await signup(server.url, "stranger");
    const workspace = await setupWorkspace(stranger);
    const registered = await registerDrone(stranger, { name: "hostile" });
    const hostile = await ScriptedDrone.connect({
      url: server.url,
      droneId: registered.droneId,
      credential: registered.credential,
      heartbeatMs: 500,
    });
    const theirs = await stranger.post(`/api/sessions/${workspace.sessionId}/turns`, {
      prompt: "anything",
      providerId: workspace.providerId,
    });
    const order = await hostile.nextWorkOrder();

    const answer = "Done while another user's drone misbehaved.";
    const fixture = await createProjectSession(user, { name: "Flooded", modelUrl: model.baseUrl });
    const requestsBefore = model.chatRequests.length;
    scriptSevenPasses(answer);
    const created = await user.post(`/api/sessions/${fixture.sessionId}/turns`, {
      prompt: "Work through the steps",
      providerId: fixture.providerId,
    });
    const turnId = created.body.turn._id as string;

    const nested: Record<string, unknown> = {};
    let cursor = nested;
    for (let depth = 0; depth < 200; depth++) {
      cursor.inner = {};
      cursor = cursor.inner as Record<string, unknown>;
    }
    const payloads: unknown[] = [
      { "nul\u0000key": 1 },
      { deep: { deeper: { "\u0000": 1 } } },
      { $set: { status: "completed" } },
      { "a.b": 1 },
      nested,
      { huge: "x".repeat(5 * 1024 * 1024) },
    ];
    const codes: string[] = [];
    let flooding = true;
    const flood = (async () => {
      let seq = order.nextSeq;
      while (flooding) {
        for (const details of payloads) {
          const ack = await hostile
            .sendBatch(theirs.body.turn._id, [
              { ...agentEvent("debug", { message: "x", details }), seq },
            ])
            .catch(() => null);
          codes.push(ack ? (ack.ok ? "ok" : ack.error.code) : "no answer");
        }
        seq++;
      }
    })();
    const events = await expectWhole(turnId, answer, requestsBefore);
    flooding = false;
    await flood;
    hostile.close();
    expect(codes.length).toBeGreaterThan(payloads.length);
    expect(new Set(codes)).toEqual(new Set(["validation_failed"]));
    // Nothing of the stranger's reached this user's turn (no debug event, none of its keys).
    expect(events.filter((event) => event.type === "debug")).toEqual([]);
    expect(JSON.stringify(events)).not.toMatch(/nul\\u0000key|"\$set"|"a\.b"|"deeper"/);
    expect((await user.get("/healthz")).status).toBe(200);
  }, 180_000);
});
