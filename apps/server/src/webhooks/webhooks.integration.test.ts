// Webhooks through the REST API against a real server: a loopback receiver checks each signed
// delivery, a failing receiver is retried, private addresses are refused under the default
// policy, secrets never come back, and another user's webhook is not found.
import { agentEvent } from "@gadget/protocol";
import { afterAll, describe, expect, it } from "vitest";
import { registerDrone, setupWorkspace, signup, waitFor } from "../testing/api-client.ts";
import { ScriptedDrone } from "../testing/scripted-drone.ts";
import { startTestServer } from "../testing/test-server.ts";
import { useTestServer } from "../testing/use-test-server.ts";
import { WebhookReceiver } from "../testing/webhook-receiver.ts";

// The loopback receiver needs private addresses allowed; `strict` keeps the default policy.
const open = useTestServer({ allowPrivateNetwork: true, webhookRetryDelayMs: 200 });
const strict = useTestServer({ quotas: { webhooks: 2 } });
const receivers: WebhookReceiver[] = [];
afterAll(async () => {
  await Promise.all(receivers.map((receiver) => receiver.close()));
});

async function receiver() {
  const started = await WebhookReceiver.start();
  receivers.push(started);
  return started;
}

const allEvents = [
  "turn.completed",
  "turn.failed",
  "turn.cancelled",
  "turn.interrupted",
  "turn.awaiting_approval",
];

describe("webhooks", () => {
  it("tells a signed receiver of approval waits and the turn's end, once each", async () => {
    const user = await signup(open.server.url, "hooked");
    const target = await receiver();
    const created = await user.post("/api/webhooks", { url: target.url, events: allEvents });
    expect(created.status).toBe(201);
    expect(created.body.secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    target.secret = created.body.secret;
    const webhookId = created.body.webhook._id;

    const workspace = await setupWorkspace(user, { approval: "on-write", projectName: "Hooks" });
    const registered = await registerDrone(user);
    const drone = await ScriptedDrone.connect({ url: open.server.url, ...registered });
    open.drones.push(drone);
    const posted = await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
      prompt: "Fix the build\nand say how",
      providerId: workspace.providerId,
    });
    const turnId: string = posted.body.turn._id;
    await drone.nextWorkOrder();
    await drone.stream(turnId, [
      agentEvent("approval", {
        approvals: [{ id: "ap-1", tool: "run_command", params: {}, description: "Run it" }],
      }),
    ]);
    await target.waitForCount(1);
    expect((await user.post(`/api/turns/${turnId}/approvals/ap-1`, { approve: true })).status).toBe(
      200,
    );
    await drone.stream(turnId, [
      // A sum of floats: the payload carries it rounded.
      agentEvent("done", { reason: "completed", passes: 1, totalCost: 0.1 + 0.2 }),
    ]);
    await target.waitForCount(2);
    await new Promise((resolve) => setTimeout(resolve, 500));

    expect(target.received.map((item) => item.payload.event)).toEqual([
      "turn.awaiting_approval",
      "turn.completed",
    ]);
    expect(target.received.every((item) => item.verified)).toBe(true);
    const completed = target.of("turn.completed", turnId)[0]!;
    expect(completed.headers).toMatchObject({
      "content-type": "application/json",
      "user-agent": "GadgetCode-Webhook",
      "x-gadget-event": "turn.completed",
    });
    expect(completed.payload).toMatchObject({
      turn: { _id: turnId, status: "completed", prompt: "Fix the build", cost: 0.3, error: null },
      session: { _id: workspace.sessionId },
      project: { _id: workspace.projectId, name: "Hooks" },
      link: `${open.server.publicUrl}/projects/${workspace.projectId}/sessions/${workspace.sessionId}`,
    });
    // A signature over other bytes (the same JSON re-serialised with spaces) does not verify.
    expect(completed.raw).not.toContain(": ");

    const deliveries = (await user.get(`/api/webhooks/${webhookId}/deliveries`)).body.deliveries;
    expect(
      deliveries.map((item: { event: string; status: string; attempts: number }) => [
        item.event,
        item.status,
        item.attempts,
      ]),
    ).toEqual([
      ["turn.completed", "delivered", 1],
      ["turn.awaiting_approval", "delivered", 1],
    ]);
    expect(deliveries[0]).toMatchObject({ turn: turnId, lastStatusCode: 200, lastError: null });
    expect(deliveries[0]._id).toBe(completed.headers["x-gadget-delivery"]);
  });

  it("queues one delivery when two servers hear the same change", async () => {
    const user = await signup(open.server.url, "twice");
    const target = await receiver();
    const created = await user.post("/api/webhooks", {
      url: target.url,
      events: ["turn.cancelled"],
    });
    target.secret = created.body.secret;
    const workspace = await setupWorkspace(user);
    const posted = await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
      prompt: "Never runs",
      providerId: workspace.providerId,
    });
    const turnId: string = posted.body.turn._id;
    // No drone: cancelling a queued turn ends it on the server.
    expect((await user.post(`/api/turns/${turnId}/cancel`)).status).toBe(202);
    await target.waitForCount(1);
    // A second process (same database and Redis) and this one both hear that change again.
    const other = await startTestServer({ ...open.server.context.config, port: 0 });
    try {
      const turn = await open.server.context.models.ChatTurn.findById(turnId).lean();
      open.server.context.webhooks.turnChanged(turn!, true);
      other.context.webhooks.turnChanged(turn!, true);
      await other.context.lifecycle.settled();
      await open.server.context.lifecycle.settled();
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    } finally {
      await other.close();
    }
    expect(target.received.map((item) => item.payload.event)).toEqual(["turn.cancelled"]);
    const deliveries = (await user.get(`/api/webhooks/${created.body.webhook._id}/deliveries`)).body
      .deliveries;
    expect(deliveries).toHaveLength(1);
  });

  it("retries a receiver that fails, and lists the attempts", async () => {
    const user = await signup(open.server.url, "retried");
    const target = await receiver();
    target.answers = [500, 503];
    const created = await user.post("/api/webhooks", { url: target.url, events: ["turn.failed"] });
    target.secret = created.body.secret;
    const webhookId = created.body.webhook._id;
    const workspace = await setupWorkspace(user);
    const registered = await registerDrone(user);
    const drone = await ScriptedDrone.connect({ url: open.server.url, ...registered });
    open.drones.push(drone);
    const posted = await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
      prompt: "Break",
      providerId: workspace.providerId,
    });
    const turnId: string = posted.body.turn._id;
    await drone.nextWorkOrder();
    await drone.stream(turnId, [
      agentEvent("error", { code: "provider_auth", message: "bad key" }),
      agentEvent("done", { reason: "error", passes: 1, totalCost: 0 }),
    ]);
    await target.waitForCount(3);
    expect(target.received.map((item) => item.payload.event)).toEqual([
      "turn.failed",
      "turn.failed",
      "turn.failed",
    ]);
    // Every attempt sends the same bytes and delivery id.
    expect(new Set(target.received.map((item) => item.raw)).size).toBe(1);
    expect(new Set(target.received.map((item) => item.headers["x-gadget-delivery"])).size).toBe(1);
    expect(target.received[0]!.payload.turn).toMatchObject({
      status: "failed",
      error: { code: "provider_auth", message: "bad key" },
    });
    const [delivery] = await waitFor(async () => {
      const listed = (await user.get(`/api/webhooks/${webhookId}/deliveries`)).body.deliveries;
      return listed[0]?.status === "delivered" ? listed : null;
    });
    expect(delivery).toMatchObject({ attempts: 3, lastStatusCode: 200, lastError: null });
  });

  it("keeps a failing delivery pending with its last error, then sends a test ping", async () => {
    const user = await signup(open.server.url, "pinged");
    const target = await receiver();
    target.answers = [500];
    const created = await user.post("/api/webhooks", { url: target.url, events: ["turn.failed"] });
    target.secret = created.body.secret;
    const webhookId = created.body.webhook._id;
    const tested = await user.post(`/api/webhooks/${webhookId}/test`);
    expect(tested.status).toBe(202);
    expect(tested.body.delivery).toMatchObject({ event: "ping", status: "pending", turn: null });
    await target.waitForCount(1);
    const failing = await waitFor(async () => {
      const listed = (await user.get(`/api/webhooks/${webhookId}/deliveries`)).body.deliveries;
      return listed[0]?.attempts === 1 ? listed[0] : null;
    });
    expect(failing).toMatchObject({
      status: "pending",
      lastStatusCode: 500,
      lastError: "the receiver answered HTTP 500",
    });
    await target.waitForCount(2);
    expect(target.received[1]).toMatchObject({ verified: true, payload: { event: "ping" } });
    expect(target.received[1]!.headers["x-gadget-event"]).toBe("ping");
  });

  it("retries a receiver's 408 and 429 but gives up at once on its other 4xx", async () => {
    const user = await signup(open.server.url, "refused");
    const target = await receiver();
    target.answers = [408, 429, 410];
    const created = await user.post("/api/webhooks", { url: target.url, events: ["turn.failed"] });
    target.secret = created.body.secret;
    const webhookId = created.body.webhook._id;
    expect((await user.post(`/api/webhooks/${webhookId}/test`)).status).toBe(202);
    // Eight attempts are allowed: `failed` after three means the 410 ended it.
    const ended = await waitFor(
      async () => {
        const listed = (await user.get(`/api/webhooks/${webhookId}/deliveries`)).body.deliveries;
        return listed[0]?.status === "pending" ? null : listed[0];
      },
      15_000,
      "the delivery no longer pending",
    );
    expect(ended).toMatchObject({
      status: "failed",
      attempts: 3,
      lastStatusCode: 410,
      lastError: "the receiver answered HTTP 410",
    });
    expect(target.received.map((item) => item.payload.event)).toEqual(["ping", "ping", "ping"]);
  });

  it("never returns the secret after creation and stores it encrypted", async () => {
    const user = await signup(open.server.url, "secretive");
    const created = await user.post("/api/webhooks", {
      url: "https://hooks.example.com/x",
      events: ["turn.completed"],
    });
    const listed = await user.get("/api/webhooks");
    expect(listed.status).toBe(200);
    expect(listed.body.webhooks).toEqual([
      {
        _id: created.body.webhook._id,
        url: "https://hooks.example.com/x",
        events: ["turn.completed"],
        createdAt: expect.any(String),
      },
    ]);
    expect(JSON.stringify(listed.body)).not.toContain(created.body.secret);
    const stored = await open.server.context.models.Webhook.findById(
      created.body.webhook._id,
    ).lean();
    expect(stored?.secretEncrypted).toMatch(/^v1:/);
    expect(JSON.stringify(stored)).not.toContain(created.body.secret.slice(6));
  });

  it("answers 404 for another user's webhook and 204 for the owner's delete", async () => {
    const owner = await signup(open.server.url, "owner");
    const other = await signup(open.server.url, "other");
    const created = await owner.post("/api/webhooks", {
      url: "https://hooks.example.com/y",
      events: ["turn.failed"],
    });
    const id = created.body.webhook._id;
    expect((await other.get(`/api/webhooks/${id}/deliveries`)).status).toBe(404);
    expect((await other.post(`/api/webhooks/${id}/test`)).status).toBe(404);
    expect((await other.delete(`/api/webhooks/${id}`)).status).toBe(404);
    expect((await other.get("/api/webhooks")).body.webhooks).toEqual([]);
    expect((await owner.delete(`/api/webhooks/${id}`)).status).toBe(204);
    expect((await owner.get("/api/webhooks")).body.webhooks).toEqual([]);
    expect((await owner.get(`/api/webhooks/${id}/deliveries`)).status).toBe(404);
    expect((await owner.get("/api/webhooks/not-an-id/deliveries")).status).toBe(404);
  });

  it("answers 400 naming the field of a bad URL or event list", async () => {
    const user = await signup(open.server.url, "invalid");
    const cases: Array<[unknown, string]> = [
      [{ url: "ftp://example.com/", events: ["turn.failed"] }, "url"],
      [{ url: "https://user:pw@example.com/", events: ["turn.failed"] }, "url"],
      [{ url: "https://example.com/", events: [] }, "events"],
      [{ url: "https://example.com/", events: ["turn.started"] }, "events.0"],
      [{ events: ["turn.failed"] }, "url"],
    ];
    for (const [body, path] of cases) {
      const response = await user.post("/api/webhooks", body);
      expect(response.status).toBe(400);
      expect(response.body.error.code).toBe("validation_failed");
      expect(response.body.error.details.map((detail: { path: string }) => detail.path)).toContain(
        path,
      );
    }
    expect((await user.get("/api/webhooks")).body.webhooks).toEqual([]);
  });
});

describe("webhooks under the default outbound policy", () => {
  it("refuses loopback and private addresses, and limits how many a user has", async () => {
    const user = await signup(strict.server.url, "strict");
    for (const url of [
      "http://127.0.0.1:8080/hook",
      "http://localhost/hook",
      "http://[::1]/hook",
      "http://10.1.2.3/hook",
      "http://169.254.169.254/latest/meta-data",
    ]) {
      const response = await user.post("/api/webhooks", { url, events: ["turn.failed"] });
      expect(response.status, url).toBe(400);
      expect(response.body.error.message).toContain("private");
    }
    const allowed = { url: "https://hooks.example.com/z", events: ["turn.failed"] };
    expect((await user.post("/api/webhooks", allowed)).status).toBe(201);
    expect((await user.post("/api/webhooks", allowed)).status).toBe(201);
    const third = await user.post("/api/webhooks", allowed);
    expect(third.status).toBe(429);
    expect(third.body.error.code).toBe("quota_exceeded");
  });

  it("does not send to a name that turned private after it was saved", async () => {
    const user = await signup(strict.server.url, "rebound");
    const target = await receiver();
    // Saved while private addresses were allowed (as if its DNS answer changed since).
    const { webhook } = await strict.server.context.webhooks.create(user.userId, {
      url: "https://hooks.example.com/w",
      events: ["turn.failed"],
    });
    await strict.server.context.models.Webhook.updateOne(
      { _id: webhook._id },
      { $set: { url: target.url } },
    );
    const tested = await user.post(`/api/webhooks/${String(webhook._id)}/test`);
    expect(tested.status).toBe(202);
    const delivery = await waitFor(async () => {
      const listed = (await user.get(`/api/webhooks/${String(webhook._id)}/deliveries`)).body
        .deliveries;
      return listed[0]?.attempts >= 1 ? listed[0] : null;
    });
    expect(delivery).toMatchObject({
      status: "pending",
      lastStatusCode: null,
      lastError: "no answer from that address",
    });
    expect(target.received).toEqual([]);
  });
});
