// Dispatch and ingestion end to end with scripted drones: queueing, capacity, drone choice,
// refusal, idempotent event batches and the ChatTurn derived from events.
import { agentEvent } from "@gadget/protocol";
import { describe, expect, it } from "vitest";
import { keyTag } from "../redis/key-space.ts";
import {
  registerDrone,
  setupWorkspace,
  signup,
  waitFor,
  waitForDrones,
} from "../testing/api-client.ts";
import { ScriptedDrone, type ScriptedDroneOptions } from "../testing/scripted-drone.ts";
import { useTestServer } from "../testing/use-test-server.ts";

const fixture = useTestServer();
const drones = fixture.drones;

async function connect(options: Omit<ScriptedDroneOptions, "url">) {
  const drone = await ScriptedDrone.connect({ url: fixture.server.url, ...options });
  drones.push(drone);
  return drone;
}

async function fleetUser(name: string, capacity = 1) {
  const user = await signup(fixture.server.url, name);
  const workspace = await setupWorkspace(user);
  const registered = await registerDrone(user, { name: `${name}-drone`, capacity });
  return { user, ...workspace, ...registered };
}

const finish = (text: string) => [
  agentEvent("status", { message: "Pass 1", pass: 1 }),
  agentEvent("tool_start", { callId: "c1", tool: "read_file", params: { path: "README.md" } }),
  agentEvent("tool_result", { callId: "c1", tool: "read_file", ok: true, summary: "read 3 lines" }),
  agentEvent("cost_update", {
    totalCost: 0.0125,
    tokens: { input: 1200, output: 80, reasoning: 40, cached: 0 },
  }),
  agentEvent("response", { message: text }),
  agentEvent("changes", {
    files: [{ path: "a.txt", status: "added" }],
    diff: "+a",
    truncated: false,
  }),
  agentEvent("done", { reason: "completed", passes: 1, totalCost: 0.0125 }),
];

describe("dispatch", () => {
  it("keeps a turn queued while no drone is online and starts it when one connects", async () => {
    const fleet = await fleetUser("waiting");
    const posted = await fleet.user.post(`/api/sessions/${fleet.sessionId}/turns`, {
      prompt: "Hello",
      providerId: fleet.providerId,
    });
    const turnId = posted.body.turn._id;
    // The dispatch the post started has run and found no drone.
    await fixture.server.context.lifecycle.settled();
    expect((await fleet.user.get(`/api/turns/${turnId}`)).body.turn.status).toBe("queued");

    const drone = await connect({ droneId: fleet.droneId, credential: fleet.credential });
    const order = await drone.nextWorkOrder();
    expect(order).toMatchObject({
      turnId,
      prompt: "Hello",
      nextSeq: 3,
      provider: { apiKey: "sk-test-secret-key", modelId: "scripted-model" },
      project: { slug: fleet.projectSlug },
      session: { mode: "agent", approval: "auto" },
    });
    const turn = (await fleet.user.get(`/api/turns/${turnId}`)).body.turn;
    expect(turn).toMatchObject({ status: "dispatched", drone: fleet.droneId });
    const events = (await fleet.user.get(`/api/turns/${turnId}/events`)).body.events;
    expect(events.map((event: { type: string }) => event.type)).toEqual(["queued", "dispatched"]);
  });

  it("stores streamed events, derives the ChatTurn from them, and ignores a re-sent batch", async () => {
    const fleet = await fleetUser("ingest");
    const drone = await connect({ droneId: fleet.droneId, credential: fleet.credential });
    const posted = await fleet.user.post(`/api/sessions/${fleet.sessionId}/turns`, {
      prompt: "Do it",
      providerId: fleet.providerId,
    });
    const turnId = posted.body.turn._id;
    const order = await drone.nextWorkOrder();

    const first = [
      { ...agentEvent("status", { message: "Pass 1", pass: 1 }), seq: order.nextSeq },
      {
        ...agentEvent("tool_start", { callId: "c1", tool: "read_file", params: {} }),
        seq: order.nextSeq + 1,
      },
    ];
    const ack = await drone.sendBatch(turnId, first);
    expect(ack).toEqual({ ok: true, lastSeq: order.nextSeq + 1 });
    // The turn takes in its events on the accumulator's next flush, not a write per batch.
    const started = await waitFor(
      async () => {
        const { turn } = (await fleet.user.get(`/api/turns/${turnId}`)).body;
        return turn.status === "processing" ? turn : null;
      },
      5_000,
      "the turn processing",
    );
    expect(started).toMatchObject({ status: "processing", stats: { toolCallCount: 1 } });
    // The drone lost the ack and sends the same batch again: nothing is stored or counted twice.
    expect(await drone.sendBatch(turnId, first)).toEqual({ ok: true, lastSeq: order.nextSeq + 1 });
    // A batch that skips ahead is refused with where to continue.
    const gap = await drone.sendBatch(turnId, [
      { ...agentEvent("token", { text: "x" }), seq: order.nextSeq + 5 },
    ]);
    expect(gap).toMatchObject({
      ok: false,
      error: { code: "conflict", details: { lastSeq: order.nextSeq + 1 } },
    });

    drone.running.set(turnId, order.nextSeq + 2);
    expect((await drone.stream(turnId, finish("All done"))).ok).toBe(true);
    const turn = (await fleet.user.get(`/api/turns/${turnId}`)).body.turn;
    expect(turn).toMatchObject({
      status: "completed",
      exitReason: "completed",
      response: "All done",
      changes: [{ path: "a.txt", status: "added" }],
      stats: {
        toolCallCount: 2,
        inputTokens: 1200,
        responseTokens: 80,
        thinkingTokenCount: 40,
        passes: 1,
        cost: 0.0125,
      },
    });
    expect(turn.finishedAt).not.toBeNull();
    expect(turn.stats.durationLabel).toMatch(/^\d+s$/);
    const events = (await fleet.user.get(`/api/turns/${turnId}/events?limit=1000`)).body.events;
    expect(events.map((event: { seq: number }) => event.seq)).toEqual(
      events.map((_: unknown, index: number) => index + 1),
    );
    expect(events).toHaveLength(2 + 2 + 7);
    // After the end, the drone no longer holds the turn.
    const late = await drone.sendBatch(turnId, [
      { ...agentEvent("token", { text: "late" }), seq: events.length + 1 },
    ]);
    expect(late).toMatchObject({ ok: false, error: { code: "forbidden" } });
    // Paging.
    const page = (await fleet.user.get(`/api/turns/${turnId}/events?after=3&limit=2`)).body.events;
    expect(page.map((event: { seq: number }) => event.seq)).toEqual([4, 5]);
  });

  it("with capacity 1, runs two turns one after the other", async () => {
    const fleet = await fleetUser("serial", 1);
    const drone = await connect({
      droneId: fleet.droneId,
      credential: fleet.credential,
      capacity: 1,
    });
    const post = (prompt: string) =>
      fleet.user.post(`/api/sessions/${fleet.sessionId}/turns`, {
        prompt,
        providerId: fleet.providerId,
      });
    const first = (await post("first")).body.turn._id;
    const firstOrder = await drone.nextWorkOrder();
    expect(firstOrder.turnId).toBe(first);
    const second = (await post("second")).body.turn._id;
    // Whatever dispatch the post started has ended.
    await fixture.server.context.lifecycle.settled();
    expect(drone.workOrders).toHaveLength(1);
    expect((await fleet.user.get(`/api/turns/${second}`)).body.turn.status).toBe("queued");

    const nextOrder = drone.nextWorkOrder();
    await drone.stream(first, finish("one"));
    const secondOrder = await nextOrder;
    expect(secondOrder.turnId).toBe(second);
    // The second turn's context holds the first exchange (the session history).
    expect(secondOrder.context.map((message) => [message.role, message.content])).toEqual([
      ["user", "first"],
      ["assistant", "one"],
    ]);
  });

  it("sends a turn to the requested drone, else prefers a drone that has the workspace", async () => {
    const user = await signup(fixture.server.url, "choice");
    const workspace = await setupWorkspace(user);
    const plain = await registerDrone(user, { name: "plain" });
    const holder = await registerDrone(user, { name: "holder" });
    const plainDrone = await connect({
      droneId: plain.droneId,
      credential: plain.credential,
      capacity: 4,
    });
    const holderDrone = await connect({
      droneId: holder.droneId,
      credential: holder.credential,
      capacity: 4,
      workspaces: [workspace.projectSlug],
    });
    await waitFor(
      async () => {
        const listed = (await user.get("/api/drones")).body.drones;
        return listed.every((drone: { status: string }) => drone.status === "online");
      },
      10_000,
      "both drones online",
    );
    const preferred = await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
      prompt: "anywhere",
      providerId: workspace.providerId,
    });
    expect((await holderDrone.nextWorkOrder()).turnId).toBe(preferred.body.turn._id);
    // Another session: the first one's next turn would wait for its first.
    const { session } = (
      await user.post(`/api/projects/${workspace.projectId}/sessions`, { name: "Other" })
    ).body;
    const requested = await user.post(`/api/sessions/${session._id}/turns`, {
      prompt: "there",
      providerId: workspace.providerId,
      droneId: plain.droneId,
    });
    expect((await plainDrone.nextWorkOrder()).turnId).toBe(requested.body.turn._id);
  });

  it("sends a session's turns to the drone holding its worktree, among drones with the project", async () => {
    const user = await signup(fixture.server.url, "affinity");
    const workspace = await setupWorkspace(user);
    const fleet = await Promise.all(
      ["east", "west"].map(async (name) => {
        const registered = await registerDrone(user, { name });
        const drone = await connect({
          droneId: registered.droneId,
          credential: registered.credential,
          capacity: 2,
          workspaces: [workspace.projectSlug],
        });
        return { droneId: registered.droneId, drone };
      }),
    );
    await waitForDrones(user, "online");
    // Both hold the project's clone; only one holds the session's worktree after its first turn.
    // Without the preference, eight turns in a row on one drone would happen once in 128 runs.
    const ranOn: string[] = [];
    for (let index = 0; index < 8; index++) {
      const posted = await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
        prompt: `turn ${index}`,
        providerId: workspace.providerId,
      });
      const turnId = posted.body.turn._id as string;
      await waitFor(
        async () =>
          fleet.some(({ drone }) => drone.workOrders.some((order) => order.turnId === turnId)),
        10_000,
        `turn ${index}'s work order on a drone`,
      );
      const holder = fleet.find(({ drone }) =>
        drone.workOrders.some((order) => order.turnId === turnId),
      )!;
      ranOn.push(holder.droneId);
      await holder.drone.stream(turnId, finish(`answer ${index}`));
      await waitFor(
        async () => (await user.get(`/api/turns/${turnId}`)).body.turn.status === "completed",
        10_000,
        `turn ${index} completed`,
      );
    }
    expect(new Set(ranOn).size).toBe(1);
  });

  it("gives a refused work order to another drone", async () => {
    const user = await signup(fixture.server.url, "refusal");
    const workspace = await setupWorkspace(user);
    const picky = await registerDrone(user, { name: "picky" });
    const willing = await registerDrone(user, { name: "willing" });
    const pickyDrone = await connect({
      droneId: picky.droneId,
      credential: picky.credential,
      workspaces: [workspace.projectSlug],
      onWorkOrder: () => ({ ok: false, error: { code: "unavailable", message: "disk full" } }),
    });
    const willingDrone = await connect({
      droneId: willing.droneId,
      credential: willing.credential,
    });
    await waitForDrones(user, "online");
    const posted = await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
      prompt: "hi",
      providerId: workspace.providerId,
    });
    const order = await willingDrone.nextWorkOrder();
    expect(order.turnId).toBe(posted.body.turn._id);
    expect(pickyDrone.workOrders).toHaveLength(0);
    const events = (await user.get(`/api/turns/${order.turnId}/events`)).body.events;
    expect(events.map((event: { type: string }) => event.type)).toEqual([
      "queued",
      "dispatched",
      "status",
      "dispatched",
    ]);
    expect(events[2].data.message).toMatch(/disk full/);
    expect(order.nextSeq).toBe(5);
  });

  it("goes on numbering a turn's events after Redis lost its counter, from what MongoDB stored", async () => {
    const fleet = await fleetUser("counter");
    const drone = await connect({ droneId: fleet.droneId, credential: fleet.credential });
    const posted = await fleet.user.post(`/api/sessions/${fleet.sessionId}/turns`, {
      prompt: "count",
      providerId: fleet.providerId,
    });
    const turnId = posted.body.turn._id;
    await drone.nextWorkOrder();
    await drone.stream(turnId, [
      agentEvent("token", { text: "a" }),
      agentEvent("token", { text: "b" }),
    ]);
    await fixture.server.context.redis.del(fixture.server.context.seqs.keyOf(turnId));
    const ack = await drone.stream(turnId, [agentEvent("token", { text: "c" })]);
    expect(ack).toEqual({ ok: true, lastSeq: 5 });
    const seqs = (await fleet.user.get(`/api/turns/${turnId}/events`)).body.events.map(
      (event: { seq: number }) => event.seq,
    );
    expect(seqs).toEqual([1, 2, 3, 4, 5]);
  });

  it("repairs a drone's used slots from the turns it really holds", async () => {
    const fleet = await fleetUser("repair", 2);
    const drone = await connect({
      droneId: fleet.droneId,
      credential: fleet.credential,
      capacity: 2,
    });
    const posted = await fleet.user.post(`/api/sessions/${fleet.sessionId}/turns`, {
      prompt: "slots",
      providerId: fleet.providerId,
    });
    await drone.nextWorkOrder();
    const { models, redis, config } = fixture.server.context;
    const ghost = "0123456789abcdef01234567";
    const slotsKey = `${keyTag(config.redisPrefix)}:drone-slots:${fleet.droneId}`;
    await models.Drone.updateOne({ _id: fleet.droneId }, { $set: { activeTurns: [ghost] } });
    await redis.sadd(slotsKey, ghost);
    await fixture.server.sweeper.repair();
    const repaired = await models.Drone.findById(fleet.droneId).lean();
    expect(repaired?.activeTurns.map(String)).toEqual([posted.body.turn._id]);
    expect((await fleet.user.get("/api/drones")).body.drones[0].activeTurns).toBe(1);
    // Dispatch counts slots in Redis: the ghost is gone there too.
    expect((await redis.smembers(slotsKey)).filter((id) => id !== "-")).toEqual([
      posted.body.turn._id,
    ]);
  });

  it("keeps capacity when Redis lost a drone's used slots, reloading them from MongoDB", async () => {
    const fleet = await fleetUser("lost-slots", 1);
    const drone = await connect({
      droneId: fleet.droneId,
      credential: fleet.credential,
      capacity: 1,
    });
    // Two sessions: a session's second turn would wait for its first whatever the drone's slots.
    const { session: other } = (
      await fleet.user.post(`/api/projects/${fleet.projectId}/sessions`, { name: "Other" })
    ).body;
    const post = (prompt: string, sessionId: string) =>
      fleet.user.post(`/api/sessions/${sessionId}/turns`, {
        prompt,
        providerId: fleet.providerId,
      });
    const first = (await post("first", fleet.sessionId)).body.turn._id;
    await drone.nextWorkOrder();
    const { models, redis, config, lifecycle } = fixture.server.context;
    await waitFor(
      async () => {
        const stored = await models.Drone.findById(fleet.droneId).lean();
        return stored?.activeTurns.map(String).includes(first);
      },
      10_000,
      "the first turn among the drone's active turns in MongoDB",
    );
    await redis.del(`${keyTag(config.redisPrefix)}:drone-slots:${fleet.droneId}`);
    const second = (await post("second", other._id)).body.turn._id;
    // The dispatch the post started has run and found the drone's one slot taken.
    await lifecycle.settled();
    expect(drone.workOrders).toHaveLength(1);
    expect((await fleet.user.get(`/api/turns/${second}`)).body.turn.status).toBe("queued");
    const next = drone.nextWorkOrder();
    await drone.stream(first, finish("one"));
    expect((await next).turnId).toBe(second);
  });
});
