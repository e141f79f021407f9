// A session's turns queued on the server: posted while one runs they wait with their place, start
// one at a time in posting order with the answers before them in their context, can be edited
// and withdrawn while they wait, and keep their order across a server restart.
import { agentEvent } from "@gadget/protocol";
import { afterAll, describe, expect, inject, it } from "vitest";
import type { GadgetServer } from "../server.ts";
import {
  ApiClient,
  registerDrone,
  setupWorkspace,
  signup,
  waitFor,
} from "../testing/api-client.ts";
import { ScriptedDrone } from "../testing/scripted-drone.ts";
import { startTestServer, uniqueName } from "../testing/test-server.ts";
import { useTestServer } from "../testing/use-test-server.ts";

const fixture = useTestServer();

async function fleetUser(url: string, name: string, capacity = 2) {
  const user = await signup(url, name);
  const workspace = await setupWorkspace(user);
  const registered = await registerDrone(user, { name: `${name}-drone`, capacity });
  return { user, ...workspace, ...registered };
}

const answer = (text: string) => [
  agentEvent("response", { message: text }),
  agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }),
];

async function post(user: ApiClient, sessionId: string, providerId: string, prompt: string) {
  const posted = await user.post(`/api/sessions/${sessionId}/turns`, { prompt, providerId });
  expect(posted.status).toBe(202);
  return posted.body.turn;
}

describe("a session's queue", () => {
  it("runs queued turns one at a time in posting order, each seeing the answers before it", async () => {
    const fleet = await fleetUser(fixture.server.url, "queue-order");
    const drone = await ScriptedDrone.connect({
      url: fixture.server.url,
      droneId: fleet.droneId,
      credential: fleet.credential,
      capacity: 2,
    });
    fixture.drones.push(drone);
    const { user, sessionId, providerId } = fleet;
    const first = await post(user, sessionId, providerId, "first");
    expect(first.waiting).toBeNull();
    const firstOrder = await drone.nextWorkOrder();
    expect(firstOrder.turnId).toBe(first._id);

    const second = await post(user, sessionId, providerId, "second");
    const third = await post(user, sessionId, providerId, "third");
    expect(second).toMatchObject({
      status: "queued",
      waiting: { reason: "session_busy", position: 1 },
    });
    expect(third.waiting).toEqual({ reason: "session_busy", position: 2 });
    const listed = (await user.get(`/api/sessions/${sessionId}/turns`)).body.turns;
    expect(listed.map((turn: { waiting: unknown }) => turn.waiting)).toEqual([
      null,
      { reason: "session_busy", position: 1 },
      { reason: "session_busy", position: 2 },
    ]);

    // Activity says where each waits (newest first).
    const activity = (await user.get("/api/turns?status=queued")).body.turns;
    expect(activity.map((turn: { queuedReason: string }) => turn.queuedReason)).toEqual([
      "Waiting for the session's earlier turns (position 2)",
      "Waiting for the session's earlier turns (position 1)",
    ]);

    // Edited while it waits; the drone has a free slot, yet nothing else was sent to it.
    const edited = await user.patch(`/api/turns/${third._id}`, { prompt: "third, edited" });
    expect(edited.status).toBe(200);
    expect(edited.body.turn).toMatchObject({ prompt: "third, edited", status: "queued" });
    expect(drone.workOrders.map((order) => order.turnId)).toEqual([first._id]);

    await drone.stream(first._id, answer("answer one"));
    const secondOrder = await drone.nextWorkOrder();
    expect(secondOrder).toMatchObject({ turnId: second._id, prompt: "second" });
    expect(secondOrder.context.map((message) => message.content)).toEqual(["first", "answer one"]);
    expect((await user.get(`/api/turns/${third._id}`)).body.turn.waiting).toEqual({
      reason: "session_busy",
      position: 1,
    });

    await drone.stream(second._id, answer("answer two"));
    const thirdOrder = await drone.nextWorkOrder();
    expect(thirdOrder).toMatchObject({ turnId: third._id, prompt: "third, edited" });
    expect(thirdOrder.context.map((message) => message.content)).toEqual([
      "first",
      "answer one",
      "second",
      "answer two",
    ]);
    // Started: its prompt is what the drone has.
    const late = await user.patch(`/api/turns/${third._id}`, { prompt: "too late" });
    expect(late.status).toBe(409);
    expect(late.body.error.code).toBe("conflict");
    await drone.stream(third._id, answer("answer three"));
  });

  it("withdraws a cancelled queued turn and starts the one behind it", async () => {
    const fleet = await fleetUser(fixture.server.url, "queue-cancel");
    const drone = await ScriptedDrone.connect({
      url: fixture.server.url,
      droneId: fleet.droneId,
      credential: fleet.credential,
      capacity: 2,
    });
    fixture.drones.push(drone);
    const { user, sessionId, providerId } = fleet;
    const first = await post(user, sessionId, providerId, "first");
    await drone.nextWorkOrder();
    const second = await post(user, sessionId, providerId, "second");
    const third = await post(user, sessionId, providerId, "third");

    const cancelled = await user.post(`/api/turns/${second._id}/cancel`, {});
    expect(cancelled.body.turn.status).toBe("cancelled");
    expect((await user.get(`/api/turns/${third._id}`)).body.turn.waiting).toEqual({
      reason: "session_busy",
      position: 1,
    });
    expect((await user.patch(`/api/turns/${second._id}`, { prompt: "x" })).status).toBe(409);

    await drone.stream(first._id, answer("answer one"));
    const next = await drone.nextWorkOrder();
    expect(next).toMatchObject({ turnId: third._id, prompt: "third" });
    expect(drone.workOrders.map((order) => order.turnId)).not.toContain(second._id);
  });

  it("refuses an edit of nobody's turn and an empty prompt", async () => {
    const fleet = await fleetUser(fixture.server.url, "queue-edit-checks");
    const other = await signup(fixture.server.url, "queue-edit-other");
    const turn = await post(fleet.user, fleet.sessionId, fleet.providerId, "mine");
    expect((await other.patch(`/api/turns/${turn._id}`, { prompt: "theirs" })).status).toBe(404);
    const empty = await fleet.user.patch(`/api/turns/${turn._id}`, { prompt: "  " });
    expect(empty.status).toBe(400);
  });

  it("keeps no place for a turn refused while its session's queue was read", async () => {
    const fleet = await fleetUser(fixture.server.url, "queue-refused");
    const other = await signup(fixture.server.url, "queue-refused-other");
    const otherWorkspace = await setupWorkspace(other);
    const { user, sessionId, providerId } = fleet;
    // Someone else's turn into this session, and the owner's with a provider not theirs.
    const foreign = await other.post(`/api/sessions/${sessionId}/turns`, {
      prompt: "not yours",
      providerId: otherWorkspace.providerId,
    });
    expect(foreign.status).toBe(404);
    const wrongProvider = await user.post(`/api/sessions/${sessionId}/turns`, {
      prompt: "wrong provider",
      providerId: otherWorkspace.providerId,
    });
    expect(wrongProvider.status).toBe(404);
    const queue = await fixture.server.context.models.SessionQueue.findById(sessionId).lean();
    expect(queue?.turns ?? []).toEqual([]);
    // The session's first real turn waits for nobody, and reaches the drone.
    const first = await post(user, sessionId, providerId, "first");
    expect(first.waiting).toBeNull();
    const drone = await ScriptedDrone.connect({
      url: fixture.server.url,
      droneId: fleet.droneId,
      credential: fleet.credential,
      capacity: 2,
    });
    fixture.drones.push(drone);
    expect((await drone.nextWorkOrder()).turnId).toBe(first._id);
  });
});

describe("a session's queue across a restart", () => {
  const servers: GadgetServer[] = [];
  afterAll(async () => {
    await servers[0]?.context.models.User.db.dropDatabase();
    for (const server of servers) await server.close();
  });

  // Once failed 1 in 3–6 runs of this file: the session's drone, recorded as the first turn was
  // accepted, was written at the moment its exchange joined the history, and FerretDB's whole-
  // document rewrite lost the exchange (session-writes.ts now locks every session write).
  it("keeps its order when the server that took the turns is gone", async () => {
    const name = uniqueName("queue-restart");
    const options = { mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl") };
    const before = await startTestServer(options, name);
    servers.push(before);
    const fleet = await fleetUser(before.url, "queue-restart");
    const { sessionId, providerId } = fleet;
    // No drone yet: the first waits for one, the second for the first.
    const first = await post(fleet.user, sessionId, providerId, "first");
    const second = await post(fleet.user, sessionId, providerId, "second");
    expect(second.waiting).toEqual({ reason: "session_busy", position: 1 });
    await before.close();
    servers.shift();

    const after = await startTestServer(options, name);
    servers.push(after);
    const user = new ApiClient(after.url, fleet.user.token);
    const drone = await ScriptedDrone.connect({
      url: after.url,
      droneId: fleet.droneId,
      credential: fleet.credential,
      capacity: 2,
    });
    fixture.drones.push(drone);
    const firstOrder = await drone.nextWorkOrder();
    expect(firstOrder.turnId).toBe(first._id);
    await drone.stream(first._id, answer("answer one"));
    const secondOrder = await drone.nextWorkOrder();
    expect(secondOrder.turnId).toBe(second._id);
    expect(secondOrder.context.map((message) => message.content)).toEqual(["first", "answer one"]);
    const done = await waitFor(
      async () => {
        const { turn } = (await user.get(`/api/turns/${second._id}`)).body;
        return turn.status === "dispatched" ? turn : null;
      },
      5_000,
      "the second turn dispatched",
    );
    expect(done.drone).toBe(fleet.droneId);
  });
});
