// The seq cursor and the ingest path against real outages: this file's own FerretDB and Redis are
// killed and restarted under a server while a scripted drone streams. A batch refused during the
// outage is answered `unavailable`, stored and applied once when sent again; `done` in such a batch
// ends the turn exactly once; the server's own events never leave a hole; a hostile batch fails
// alone and crashes nothing.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { type AgentEvent, agentEvent, type TurnEvent } from "@gadget/protocol";
import {
  databaseUrl,
  findRepoRoot,
  type RestartableService,
  startRestartableMongo,
  startRestartableRedis,
} from "@gadget/services";
import { Types } from "mongoose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { GadgetServer } from "../server.ts";
import { StorageHealth } from "../storage/health.ts";
import {
  type ApiClient,
  IdeClient,
  registerDrone,
  setupWorkspace,
  signup,
  waitFor,
} from "../testing/api-client.ts";
import { ScriptedDrone } from "../testing/scripted-drone.ts";
import { startTestServer } from "../testing/test-server.ts";
import { WebhookReceiver } from "../testing/webhook-receiver.ts";
import { EventWriter } from "./store/event-writer.ts";

let base: string;
let mongo: RestartableService;
let redis: RestartableService;
let server: GadgetServer;
const drones: ScriptedDrone[] = [];

beforeAll(async () => {
  base = await mkdtemp(path.join(tmpdir(), "gadget-outages-"));
  [mongo, redis] = await Promise.all([
    startRestartableMongo(findRepoRoot(), path.join(base, "mongo")),
    startRestartableRedis(path.join(base, "redis")),
  ]);
  server = await startTestServer(
    {
      mongoUrl: databaseUrl(mongo.url, "outages"),
      redisUrl: redis.url,
      // Longer than the outages below: only a drone that is really gone loses its turn.
      droneGraceMs: 20_000,
      storageRetryMs: 1_000,
      redisCommandTimeoutMs: 2_000,
      // A loopback webhook receiver, whose failed delivery is retried only after the outage.
      allowPrivateNetwork: true,
      webhookRetryDelayMs: 60_000,
    },
    "outages",
  );
}, 120_000);

afterAll(async () => {
  for (const drone of drones) drone.close();
  await server?.close().catch(() => undefined);
  await Promise.all([mongo?.stop(), redis?.stop()]);
  if (base) await rm(base, { recursive: true, force: true });
});

async function runningTurn(name: string) {
  const user = await signup(server.url, name);
  const workspace = await setupWorkspace(user);
  const registered = await registerDrone(user, { name: `${name}-drone` });
  const drone = await ScriptedDrone.connect({
    url: server.url,
    droneId: registered.droneId,
    credential: registered.credential,
    heartbeatMs: 300,
  });
  drones.push(drone);
  const posted = await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
    prompt: "Work",
    providerId: workspace.providerId,
  });
  const turnId: string = posted.body.turn._id;
  const order = await drone.nextWorkOrder();
  return { user, drone, turnId, nextSeq: order.nextSeq };
}

/** Sends events as one batch from `seq`; answers the ack. */
function send(drone: ScriptedDrone, turnId: string, seq: number, events: AgentEvent[]) {
  return drone.sendBatch(
    turnId,
    events.map((event, index) => ({ ...event, seq: seq + index, at: new Date().toISOString() })),
  );
}

/** Keeps sending until the server answers ok (what a drone's sender does). */
async function sendUntilStored(
  drone: ScriptedDrone,
  turnId: string,
  seq: number,
  events: AgentEvent[],
): Promise<string[]> {
  const codes: string[] = [];
  for (let attempt = 0; attempt < 100; attempt++) {
    const ack = await send(drone, turnId, seq, events).catch(() => null);
    if (ack?.ok) return codes;
    codes.push(ack ? ack.error.code : "no answer");
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`never stored: ${codes.join(", ")}`);
}

async function storedEvents(user: ApiClient, turnId: string) {
  const page = await user.get(`/api/turns/${turnId}/events?after=0&limit=1000`);
  return page.body.events as Array<{ seq: number; type: string; data: Record<string, unknown> }>;
}

describe("the database goes away in the middle of a turn", () => {
  it("answers `unavailable`, then stores, applies and relays a re-sent batch once; `done` ends the turn once", async () => {
    const { user, drone, turnId, nextSeq } = await runningTurn("db-outage");
    const watcher = await IdeClient.connect(server.url, user.token ?? "");
    await watcher.subscribe({ turnId });
    const first = [
      agentEvent("status", { message: "Pass 1", pass: 1 }),
      agentEvent("tool_start", { callId: "c1", tool: "read_file", params: {} }),
    ];
    expect((await send(drone, turnId, nextSeq, first)).ok).toBe(true);

    await mongo.kill();
    const during = await send(drone, turnId, nextSeq + 2, [
      agentEvent("tool_result", { callId: "c1", tool: "read_file", ok: true, summary: "read" }),
      agentEvent("response", { message: "The answer" }),
      agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }),
    ]).finally(() => mongo.start());
    expect(during.ok).toBe(false);
    expect(during.ok ? "" : during.error.code).toBe("unavailable");
    const codes = await sendUntilStored(drone, turnId, nextSeq + 2, [
      agentEvent("tool_result", { callId: "c1", tool: "read_file", ok: true, summary: "read" }),
      agentEvent("response", { message: "The answer" }),
      agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }),
    ]);
    expect(codes.every((code) => code === "unavailable" || code === "no answer")).toBe(true);
    const turn = (await user.get(`/api/turns/${turnId}`)).body.turn;
    expect(turn).toMatchObject({ status: "completed", response: "The answer" });
    expect(turn.stats.toolCallCount).toBe(1);
    const events = await storedEvents(user, turnId);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    expect(events.filter((event) => event.type === "done")).toHaveLength(1);
    // Sent again once more (a lost ack): nothing changes.
    expect(
      (
        await send(drone, turnId, nextSeq + 2, [
          agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }),
        ])
      ).ok,
    ).toBe(true);
    expect(await storedEvents(user, turnId)).toHaveLength(events.length);
    // Relayed live once each (the browser also fills gaps from the store: what it was sent live counts here).
    await waitFor(() => watcher.seqs(turnId).includes(events.at(-1)!.seq), 5_000, "done relayed");
    const live = watcher.seqs(turnId);
    expect(new Set(live).size).toBe(live.length);
    watcher.close();
  }, 60_000);

  it("numbers the server's own events after what is stored, not after seqs the drone never stored", async () => {
    const { user, drone, turnId, nextSeq } = await runningTurn("db-hole");
    expect(
      (await send(drone, turnId, nextSeq, [agentEvent("status", { message: "Pass 1", pass: 1 })]))
        .ok,
    ).toBe(true);
    await mongo.kill();
    // Taken (checked) but never stored.
    const lost = await send(drone, turnId, nextSeq + 1, [
      agentEvent("token", { text: "never stored" }),
    ]).finally(() => mongo.start());
    expect(lost.ok).toBe(false);
    drone.close();
    // The drone is gone for good: the server ends the turn itself.
    const ended = await server.turns.finishNow(turnId, "interrupted", "gone");
    expect(ended?.status).toBe("interrupted");
    const events = await storedEvents(user, turnId);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    expect(events.at(-1)?.type).toBe("done");
    expect(events.some((event) => event.data.text === "never stored")).toBe(false);
  }, 60_000);
});

describe("Redis goes away and comes back empty", () => {
  it("answers `unavailable` meanwhile and goes on numbering from what is stored", async () => {
    const { user, drone, turnId, nextSeq } = await runningTurn("redis-outage");
    expect(
      (await send(drone, turnId, nextSeq, [agentEvent("status", { message: "Pass 1", pass: 1 })]))
        .ok,
    ).toBe(true);
    await redis.kill();
    const during = await send(drone, turnId, nextSeq + 1, [agentEvent("token", { text: "a" })])
      .catch(() => null)
      .finally(() => redis.start());
    expect(during?.ok ?? false).toBe(false);
    await sendUntilStored(drone, turnId, nextSeq + 1, [agentEvent("token", { text: "a" })]);
    await sendUntilStored(drone, turnId, nextSeq + 2, [
      agentEvent("response", { message: "after Redis" }),
      agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }),
    ]);
    await waitFor(
      async () => (await user.get(`/api/turns/${turnId}`)).body.turn.status === "completed",
      10_000,
      "completed",
    );
    const events = await storedEvents(user, turnId);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    expect(events.filter((event) => event.type === "done")).toHaveLength(1);
  }, 60_000);
});

describe("Redis comes back empty", () => {
  it("sends a webhook delivery whose retry was queued in the Redis that was lost", async () => {
    const target = await WebhookReceiver.start();
    try {
      target.answers = [500];
      const { user, drone, turnId, nextSeq } = await runningTurn("webhook-outage");
      const created = await user.post("/api/webhooks", {
        url: target.url,
        events: ["turn.failed"],
      });
      const webhookId: string = created.body.webhook._id;
      await sendUntilStored(drone, turnId, nextSeq, [
        agentEvent("error", { code: "provider_auth", message: "bad key" }),
        agentEvent("done", { reason: "error", passes: 1, totalCost: 0 }),
      ]);
      // The first attempt fails; its retry waits in Redis (a minute away, as this server says).
      await target.waitForCount(1);
      await waitFor(
        async () =>
          (await user.get(`/api/webhooks/${webhookId}/deliveries`)).body.deliveries[0]?.attempts ===
          1,
        10_000,
        "the first attempt recorded",
      );
      await redis.kill();
      await redis.start();
      await target.waitForCount(2, 30_000);
      const [delivery] = await waitFor(
        async () => {
          const listed = (await user.get(`/api/webhooks/${webhookId}/deliveries`)).body.deliveries;
          return listed[0]?.status === "delivered" ? listed : null;
        },
        10_000,
        "the delivery delivered",
      );
      expect(delivery).toMatchObject({ attempts: 2, lastStatusCode: 200 });
      expect(target.received.map((item) => item.payload.event)).toEqual([
        "turn.failed",
        "turn.failed",
      ]);
    } finally {
      await target.close();
    }
  }, 90_000);
});

describe("the database goes away under a write of several turns' batches", () => {
  it("tells each turn's user it waits as the write first fails, and answers its batches together", async () => {
    const { models, logger } = server.context;
    // What the turns' users hear and what the writer's callers are answered, in order.
    const heard: string[] = [];
    const health = new StorageHealth({
      logger,
      onFailure: (service) => heard.push(`failure of the ${service}`),
      onWaiting: ({ turnId }, waiting) => {
        if (waiting) heard.push(`waits ${turnId} on the ${waiting.on}`);
      },
    });
    const writer = new EventWriter(models, health, { gatherMs: 50, retryForMs: 1_000 });
    const events = (turnSeq: number) => [
      { ...agentEvent("token", { text: "t" }), seq: turnSeq, at: new Date() } as TurnEvent,
    ];
    // Nine writes in a row: the writer is under load and gathers the next three into one write.
    const warm = String(new Types.ObjectId());
    for (let index = 1; index <= 9; index++) await writer.write(warm, events(index));
    const turns = [0, 1, 2].map(() => String(new Types.ObjectId()));
    const user = String(new Types.ObjectId());
    await mongo.kill();
    const outcomes = await Promise.allSettled(
      turns.map((turnId) =>
        writer.write(turnId, events(1), user).catch((error: unknown) => {
          heard.push(`answered ${turnId}`);
          throw error;
        }),
      ),
    ).finally(() => mongo.start());
    expect(outcomes.map((outcome) => outcome.status)).toEqual(["rejected", "rejected", "rejected"]);
    for (const outcome of outcomes) {
      expect(outcome.status === "rejected" && outcome.reason).toMatchObject({
        code: "unavailable",
      });
    }
    // Told at the first failure, before any retry gave up; then the three answered together,
    // not one by one, each after retries of its own.
    const firstAnswer = heard.findIndex((entry) => entry.startsWith("answered"));
    expect(
      heard
        .slice(0, firstAnswer)
        .filter((entry) => entry.startsWith("waits"))
        .sort(),
    ).toEqual(turns.map((turnId) => `waits ${turnId} on the database`).sort());
    // The driver's refused connection is the database's outage, never Redis's (a turn waiting on
    // Redis is told only to this server's browsers).
    expect(new Set(heard.filter((entry) => entry.startsWith("failure")))).toEqual(
      new Set(["failure of the database"]),
    );
    expect(heard.slice(firstAnswer).sort()).toEqual(
      turns.map((turnId) => `answered ${turnId}`).sort(),
    );
  }, 60_000);
});

describe("a hostile drone", () => {
  it("has its unstorable batches refused alone, while another user's batches go on", async () => {
    const honest = await runningTurn("honest");
    const hostile = await runningTurn("hostile");
    const nested: Record<string, unknown> = {};
    let cursor = nested;
    for (let depth = 0; depth < 100; depth++) {
      cursor.next = {};
      cursor = cursor.next as Record<string, unknown>;
    }
    const bad: Array<Record<string, unknown>> = [
      { "key\u0000nul": 1 },
      { nested: { "\u0000": { deeper: true } } },
      { $where: "1" },
      { "dotted.key": 1 },
      nested,
      { huge: "x".repeat(3 * 1024 * 1024) },
    ];
    let seq = hostile.nextSeq;
    for (const details of bad) {
      const [honestAck, hostileAck] = await Promise.all([
        send(honest.drone, honest.turnId, honest.nextSeq + (seq - hostile.nextSeq), [
          agentEvent("token", { text: "ok" }),
        ]),
        send(hostile.drone, hostile.turnId, seq, [agentEvent("debug", { message: "x", details })]),
      ]);
      expect(honestAck.ok).toBe(true);
      expect(hostileAck.ok).toBe(false);
      expect(hostileAck.ok ? "" : hostileAck.error.code).toBe("validation_failed");
      seq++;
    }
    const events = await storedEvents(honest.user, honest.turnId);
    expect(events.filter((event) => event.type === "token")).toHaveLength(bad.length);
    expect((await honest.user.get(`/api/turns/${honest.turnId}`)).body.turn.status).not.toBe(
      "interrupted",
    );
    expect((await honest.user.get("/healthz")).status).toBe(200);
  }, 60_000);
});
