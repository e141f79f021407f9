// Operations: liveness, readiness, Prometheus metrics, and a graceful stop that lets drones go on elsewhere.
import { agentEvent } from "@gadget/protocol";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createGadgetServer, type GadgetServer } from "../server.ts";
import {
  ApiClient,
  registerDrone,
  setupWorkspace,
  signup,
  waitFor,
} from "../testing/api-client.ts";
import { ScriptedDrone } from "../testing/scripted-drone.ts";
import { testConfig, uniqueName } from "../testing/test-server.ts";

const name = uniqueName("operations");
let server: GadgetServer;
const drones: ScriptedDrone[] = [];

beforeAll(async () => {
  server = await createGadgetServer(
    testConfig({ mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl") }, name),
  );
});
afterAll(async () => {
  for (const drone of drones) drone.close();
  await server?.close();
});

describe("operations", () => {
  it("answers /healthz and /readyz", async () => {
    const anonymous = new ApiClient(server.url);
    expect(await anonymous.get("/healthz")).toMatchObject({ status: 200, body: { ok: true } });
    expect(await anonymous.get("/readyz")).toMatchObject({
      status: 200,
      body: { ok: true, checks: { mongo: true, redis: true } },
    });
  });

  it("exposes connected drones, queued/running turns, dispatch latency and ingested events", async () => {
    const user = await signup(server.url, "metrics");
    const workspace = await setupWorkspace(user);
    const { droneId, credential } = await registerDrone(user);
    await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
      prompt: "one",
      providerId: workspace.providerId,
    });
    const drone = await ScriptedDrone.connect({ url: server.url, droneId, credential });
    drones.push(drone);
    const order = await drone.nextWorkOrder();
    await drone.stream(order.turnId, [
      agentEvent("token", { text: "a" }),
      agentEvent("token", { text: "b" }),
    ]);
    await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
      prompt: "two",
      providerId: workspace.providerId,
    });
    const metrics = (await new ApiClient(server.url).get("/metrics")).body as string;
    expect(metrics).toMatch(/^gadget_connected_drones 1$/m);
    expect(metrics).toMatch(/^gadget_turns\{state="queued"\} 1$/m);
    expect(metrics).toMatch(/^gadget_turns\{state="running"\} 1$/m);
    expect(metrics).toMatch(/^gadget_dispatch_latency_seconds_count 1$/m);
    expect(metrics).toMatch(/^gadget_events_ingested_total 2$/m);
  });

  it("stops gracefully: not ready, drones disconnected, turns kept for another server", async () => {
    const other = await createGadgetServer(
      testConfig({ mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl") }, name),
    );
    try {
      const user = await signup(server.url, "graceful");
      const workspace = await setupWorkspace(user);
      const { droneId, credential } = await registerDrone(user);
      const drone = await ScriptedDrone.connect({
        url: server.url,
        droneId,
        credential,
        heartbeatMs: 200,
      });
      drones.push(drone);
      const posted = await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
        prompt: "keep going",
        providerId: workspace.providerId,
      });
      const turnId = posted.body.turn._id;
      await drone.nextWorkOrder();
      await drone.stream(turnId, [agentEvent("token", { text: "before" })]);

      const closing = server.close();
      await drone.waitForDisconnect();
      await closing;
      // The drone reconnects to the other server and finishes the turn there.
      const moved = await ScriptedDrone.connect({
        url: other.url,
        droneId,
        credential,
        activeTurns: [turnId],
        heartbeatMs: 200,
      });
      drones.push(moved);
      for (const [id, next] of drone.running) moved.running.set(id, next);
      const ack = await moved.stream(turnId, [
        agentEvent("response", { message: "finished elsewhere" }),
        agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }),
      ]);
      expect(ack.ok).toBe(true);
      const viaOther = new ApiClient(other.url, user.token);
      expect((await viaOther.get(`/api/turns/${turnId}`)).body.turn).toMatchObject({
        status: "completed",
        response: "finished elsewhere",
      });
      await waitFor(
        async () => (await fetch(`${server.url}/healthz`).catch(() => null)) === null,
        5_000,
        "closed port",
      );
    } finally {
      await other.context.models.User.db.dropDatabase();
      await other.close();
    }
  });
});
