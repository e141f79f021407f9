// Two server processes sharing MongoDB and Redis, both running the webhook worker: every turn
// change is delivered once, whichever process recorded it and whichever took the job.
import { randomUUID } from "node:crypto";
import { agentEvent } from "@gadget/protocol";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  ApiClient,
  registerDrone,
  setupWorkspace,
  signup,
  waitFor,
} from "../testing/api-client.ts";
import { ScriptedDrone } from "../testing/scripted-drone.ts";
import { type ServerPair, type ServerProcess, startServerPair } from "../testing/server-process.ts";
import { WebhookReceiver } from "../testing/webhook-receiver.ts";

let first: ServerProcess;
let second: ServerProcess;
let pair: ServerPair;
let receiver: WebhookReceiver;
const closers: Array<{ close(): void }> = [];

beforeAll(async () => {
  [pair, receiver] = await Promise.all([
    startServerPair({
      mongoUrl: inject("mongoUrl"),
      redisUrl: inject("redisUrl"),
      name: `hooks_${randomUUID().slice(0, 8)}`,
      // The receiver listens on loopback.
      env: { GADGET_ALLOW_PRIVATE_NETWORK: "true" },
    }),
    WebhookReceiver.start(),
  ]);
  ({ first, second } = pair);
}, 60_000);
afterAll(async () => {
  for (const item of closers) item.close();
  await Promise.all([pair?.stop(), receiver?.close()]);
});

describe("webhooks with two server processes", () => {
  it("deliver each turn's approval wait, completion, failure and cancel exactly once", async () => {
    const user = await signup(first.url, "fleet");
    const onSecond = new ApiClient(second.url, user.token);
    const created = await onSecond.post("/api/webhooks", {
      url: receiver.url,
      events: [
        "turn.completed",
        "turn.failed",
        "turn.cancelled",
        "turn.interrupted",
        "turn.awaiting_approval",
      ],
    });
    expect(created.status).toBe(201);
    receiver.secret = created.body.secret;
    const workspace = await setupWorkspace(user, { approval: "on-write" });
    // Each turn in its own session, so they run side by side on the two drones.
    const sessions = [workspace.sessionId];
    for (let index = 1; index < 6; index++) {
      const made = await user.post(`/api/projects/${workspace.projectId}/sessions`, {
        name: `s${index}`,
        approval: "on-write",
      });
      sessions.push(made.body.session._id);
    }
    const drones: ScriptedDrone[] = [];
    for (const [label, server] of [
      ["a", first],
      ["b", second],
    ] as const) {
      const registered = await registerDrone(user, { name: label, capacity: 3 });
      const drone = await ScriptedDrone.connect({
        url: server.url,
        ...registered,
        capacity: 3,
        heartbeatMs: 500,
      });
      closers.push(drone);
      drones.push(drone);
    }
    await waitFor(async () =>
      (await user.get("/api/drones")).body.drones.every(
        (drone: { status: string }) => drone.status === "online",
      ),
    );
    const posted = await Promise.all(
      sessions.map((sessionId, index) =>
        (index % 2 === 0 ? user : onSecond).post(`/api/sessions/${sessionId}/turns`, {
          prompt: `turn ${index}`,
          providerId: workspace.providerId,
        }),
      ),
    );
    const turnIds: string[] = posted.map((response) => response.body.turn._id);
    await waitFor(
      () => drones.flatMap((drone) => drone.workOrders).length === turnIds.length,
      10_000,
      "work orders",
    );
    const holder = (turnId: string) =>
      drones.find((drone) => drone.workOrders.some((order) => order.turnId === turnId))!;
    const ends = ["completed", "error", "cancelled"] as const;
    const expected: string[] = [];
    await Promise.all(
      turnIds.map(async (turnId, index) => {
        const drone = holder(turnId);
        await drone.stream(turnId, [
          agentEvent("approval", {
            approvals: [{ id: `ap-${index}`, tool: "run_command", params: {}, description: "Run" }],
          }),
        ]);
        expected.push(`turn.awaiting_approval ${turnId}`);
        // The decision goes through the process the drone is not connected to, half the time.
        const client = index % 3 === 0 ? onSecond : user;
        const decided = await client.post(`/api/turns/${turnId}/approvals/ap-${index}`, {
          approve: true,
        });
        expect(decided.status).toBe(200);
        const end = ends[index % ends.length]!;
        await drone.stream(turnId, [
          ...(end === "error" ? [agentEvent("error", { code: "internal", message: "boom" })] : []),
          agentEvent("done", { reason: end, passes: 1, totalCost: 0 }),
        ]);
        expected.push(`${end === "error" ? "turn.failed" : `turn.${end}`} ${turnId}`);
      }),
    );
    await receiver.waitForCount(expected.length);
    // Long enough for a duplicate from the other process's worker to show up.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const got = receiver.received.map((item) => `${item.payload.event} ${item.payload.turn?._id}`);
    expect(got.sort()).toEqual(expected.sort());
    expect(receiver.received.every((item) => item.verified)).toBe(true);
    expect(new Set(receiver.received.map((item) => item.headers["x-gadget-delivery"])).size).toBe(
      expected.length,
    );
  });
});
