// Two server processes sharing MongoDB and Redis: a drone on one runs a prompt posted to the
// other, browsers on either see it live without gap, control reaches the drone wherever it is,
// and SIGTERM lets the drone carry on through the other process.
import { randomUUID } from "node:crypto";
import { agentEvent } from "@gadget/protocol";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  ApiClient,
  IdeClient,
  registerDrone,
  setupWorkspace,
  signup,
  waitFor,
} from "./testing/api-client.ts";
import { ScriptedDrone } from "./testing/scripted-drone.ts";
import { type ServerPair, type ServerProcess, startServerPair } from "./testing/server-process.ts";

let first: ServerProcess;
let second: ServerProcess;
let pair: ServerPair;
const closers: Array<{ close(): void }> = [];

beforeAll(async () => {
  pair = await startServerPair({
    mongoUrl: inject("mongoUrl"),
    redisUrl: inject("redisUrl"),
    name: `two_${randomUUID().slice(0, 8)}`,
    env: { DRONE_GRACE_MS: "20000" },
  });
  ({ first, second } = pair);
}, 60_000);
afterAll(async () => {
  for (const item of closers) item.close();
  await pair?.stop();
});

describe("two server processes", () => {
  it("run a prompt posted to one on a drone connected to the other, live on both", async () => {
    const user = await signup(first.url, "two");
    const onSecond = new ApiClient(second.url, user.token);
    const workspace = await setupWorkspace(onSecond);
    const { droneId, credential } = await registerDrone(user);
    const drone = await ScriptedDrone.connect({
      url: first.url,
      droneId,
      credential,
      heartbeatMs: 500,
    });
    closers.push(drone);
    await waitFor(
      async () => (await onSecond.get("/api/drones")).body.drones[0].status === "online",
    );

    const watchFirst = await IdeClient.connect(first.url, user.token!);
    const watchSecond = await IdeClient.connect(second.url, user.token!);
    closers.push(watchFirst, watchSecond);
    expect(await watchFirst.subscribe({ sessionId: workspace.sessionId })).toEqual({ ok: true });
    expect(await watchSecond.subscribe({ sessionId: workspace.sessionId })).toEqual({ ok: true });

    const posted = await onSecond.post(`/api/sessions/${workspace.sessionId}/turns`, {
      prompt: "across servers",
      providerId: workspace.providerId,
    });
    const turnId = posted.body.turn._id;
    const order = await drone.nextWorkOrder();
    expect(order.turnId).toBe(turnId);
    for (let batch = 0; batch < 5; batch++) {
      const events = Array.from({ length: 20 }, (_, index) =>
        agentEvent("token", { text: `${batch}.${index} ` }),
      );
      expect((await drone.stream(turnId, events)).ok).toBe(true);
    }
    const expected = Array.from({ length: 102 }, (_, index) => index + 1);
    await waitFor(
      () => watchFirst.seqs(turnId).length >= 102 && watchSecond.seqs(turnId).length >= 102,
      10_000,
      "live events",
    );
    expect(watchFirst.seqs(turnId)).toEqual(expected);
    expect(watchSecond.seqs(turnId)).toEqual(expected);

    // Cancel through the server the drone is not connected to.
    const cancelled = await onSecond.post(`/api/turns/${turnId}/cancel`);
    expect(cancelled.status).toBe(202);
    expect(drone.cancels).toEqual([turnId]);
    await drone.stream(turnId, [
      agentEvent("done", { reason: "cancelled", passes: 1, totalCost: 0 }),
    ]);
    expect((await user.get(`/api/turns/${turnId}`)).body.turn.status).toBe("cancelled");
  });

  it("routes by labels across the two: a turn posted to either goes only to a matching drone, on either", async () => {
    const user = await signup(first.url, "two-labels");
    const onSecond = new ApiClient(second.url, user.token);
    const workspace = await setupWorkspace(user);
    const kinds = [
      { name: "gpu-on-first", url: first.url, labels: ["gpu"] },
      { name: "cpu-on-second", url: second.url, labels: ["cpu"] },
      { name: "tpu-on-second", url: second.url, labels: ["tpu"] },
    ];
    const fleet: Array<{ name: string; drone: ScriptedDrone }> = [];
    for (const kind of kinds) {
      const registered = await registerDrone(user, { name: kind.name, labels: kind.labels });
      const drone = await ScriptedDrone.connect({
        url: kind.url,
        droneId: registered.droneId,
        credential: registered.credential,
        capacity: 8,
        labels: ["os=linux"],
      });
      closers.push(drone);
      fleet.push({ name: kind.name, drone });
    }
    await waitFor(async () =>
      ((await user.get("/api/drones")).body.drones as Array<{ status: string }>).every(
        (drone) => drone.status === "online",
      ),
    );
    const ranOn = async (client: ApiClient, requires: string[]) => {
      // A session of its own: the turns before it in one session would hold it back.
      const { session } = (
        await client.post(`/api/projects/${workspace.projectId}/sessions`, {
          name: requires.join(" "),
        })
      ).body;
      const posted = await client.post(`/api/sessions/${session._id}/turns`, {
        prompt: `needs ${requires.join(" ")}`,
        providerId: workspace.providerId,
        requires,
      });
      const turnId = posted.body.turn._id as string;
      await waitFor(async () =>
        fleet.some(({ drone }) => drone.workOrders.some((order) => order.turnId === turnId)),
      );
      return fleet
        .filter(({ drone }) => drone.workOrders.some((order) => order.turnId === turnId))
        .map(({ name }) => name);
    };
    for (const client of [user, onSecond, user, onSecond]) {
      expect(await ranOn(client, ["gpu"])).toEqual(["gpu-on-first"]);
      expect(await ranOn(client, ["tpu", "os=linux"])).toEqual(["tpu-on-second"]);
      expect(await ranOn(client, ["cpu"])).toEqual(["cpu-on-second"]);
    }
  });

  it("revokes, through one server, a drone connected to the other: kicked at once", async () => {
    const user = await signup(first.url, "revoke");
    const { droneId, credential } = await registerDrone(user);
    const drone = await ScriptedDrone.connect({ url: first.url, droneId, credential });
    closers.push(drone);
    await waitFor(async () => (await user.get("/api/drones")).body.drones[0].status === "online");
    expect(
      (await new ApiClient(second.url, user.token).delete(`/api/drones/${droneId}`)).status,
    ).toBe(204);
    await drone.waitForDisconnect();
    expect(drone.revocations).toHaveLength(1);
  });

  it("hands a burst of turns posted to both servers to one drone each, never beyond capacity", async () => {
    const user = await signup(first.url, "burst");
    const onSecond = new ApiClient(second.url, user.token);
    const workspace = await setupWorkspace(user);
    // One session per turn: a session's turns wait for each other's history, not for capacity.
    const sessions = [workspace.sessionId];
    for (let index = 1; index < 8; index++) {
      const created = await user.post(`/api/projects/${workspace.projectId}/sessions`, {
        name: `burst ${index}`,
      });
      sessions.push(created.body.session._id);
    }
    const drones: ScriptedDrone[] = [];
    for (const [label, server] of [
      ["a", first],
      ["b", second],
    ] as const) {
      const { droneId, credential } = await registerDrone(user, {
        name: `burst-${label}`,
        capacity: 2,
      });
      const drone = await ScriptedDrone.connect({
        url: server.url,
        droneId,
        credential,
        capacity: 2,
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
    const finished = new Set<string>();
    const orders = () => drones.flatMap((drone) => drone.workOrders.map((order) => order.turnId));
    const running = (drone: ScriptedDrone) =>
      drone.workOrders.filter((order) => !finished.has(order.turnId));

    // Each server dispatches what was posted to it at once, and both queue a job for it too.
    const posted = await Promise.all(
      sessions.map((sessionId, index) =>
        (index % 2 === 0 ? user : onSecond).post(`/api/sessions/${sessionId}/turns`, {
          prompt: `burst ${index}`,
          providerId: workspace.providerId,
        }),
      ),
    );
    expect(posted.map((response) => response.status)).toEqual(sessions.map(() => 202));
    while (finished.size < sessions.length) {
      const expected = Math.min(sessions.length, finished.size + 4);
      await waitFor(() => orders().length >= expected, 10_000, `${expected} work orders`);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(orders()).toHaveLength(expected);
      for (const drone of drones) {
        expect(running(drone).length).toBeLessThanOrEqual(2);
        for (const order of running(drone)) {
          expect((await drone.stream(order.turnId, finish)).ok).toBe(true);
          finished.add(order.turnId);
        }
      }
    }
    expect(new Set(orders())).toEqual(
      new Set(posted.map((response) => response.body.turn._id as string)),
    );
    const turns = (
      await Promise.all(sessions.map((sessionId) => user.get(`/api/sessions/${sessionId}/turns`)))
    ).flatMap((response) => response.body.turns);
    expect(turns.map((turn: { status: string }) => turn.status)).toEqual(
      sessions.map(() => "completed"),
    );
  });

  it("keeps a turn across SIGTERM of the drone's server: the drone goes on through the other", async () => {
    const user = await signup(second.url, "sigterm");
    const workspace = await setupWorkspace(user);
    const { droneId, credential } = await registerDrone(user);
    const drone = await ScriptedDrone.connect({
      url: first.url,
      droneId,
      credential,
      heartbeatMs: 500,
    });
    closers.push(drone);
    const watcher = await IdeClient.connect(second.url, user.token!);
    closers.push(watcher);
    const posted = await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
      prompt: "survive",
      providerId: workspace.providerId,
    });
    const turnId = posted.body.turn._id;
    await drone.nextWorkOrder();
    expect(await watcher.subscribe({ turnId })).toEqual({ ok: true });
    await drone.stream(turnId, [agentEvent("token", { text: "one" })]);

    expect(await first.stop("SIGTERM")).toBe(0);
    await drone.waitForDisconnect();
    const moved = await ScriptedDrone.connect({
      url: second.url,
      droneId,
      credential,
      activeTurns: [turnId],
      heartbeatMs: 500,
    });
    closers.push(moved);
    for (const [id, next] of drone.running) moved.running.set(id, next);
    await moved.stream(turnId, [
      agentEvent("response", { message: "done on the other server" }),
      agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }),
    ]);
    expect((await user.get(`/api/turns/${turnId}`)).body.turn).toMatchObject({
      status: "completed",
      response: "done on the other server",
    });
    await waitFor(() => watcher.seqs(turnId).length >= 5, 5_000, "all events");
    expect(watcher.seqs(turnId)).toEqual([1, 2, 3, 4, 5]);
  });
});

const finish = [
  agentEvent("response", { message: "done" }),
  agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }),
];
