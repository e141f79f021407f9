// Finding 10 of the attacker's pass, the drone side: a hostile drone learned from the "not held"
// answer whether another user's turn existed and its status, and a revoked drone's heartbeats
// could bring its presence back (and dispatch never checked revocation). Attacked with scripted
// drones over the real /drones namespace.
import { randomBytes } from "node:crypto";
import { type Ack, agentEvent } from "@gadget/protocol";
import { describe, expect, it } from "vitest";
import { registerDrone, setupWorkspace, signup, waitFor } from "../../src/testing/api-client.ts";
import { ScriptedDrone } from "../../src/testing/scripted-drone.ts";
import { useTestServer } from "../../src/testing/use-test-server.ts";

const fixture = useTestServer();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A user with a workspace and a connected drone. */
async function fleetUser(name: string, droneOptions: { heartbeatMs?: number } = {}) {
  const user = await signup(fixture.server.url, name);
  const workspace = await setupWorkspace(user);
  const { droneId, credential } = await registerDrone(user, { name: `${name}-drone` });
  const drone = await ScriptedDrone.connect({
    url: fixture.server.url,
    droneId,
    credential,
    ...droneOptions,
  });
  fixture.drones.push(drone);
  await waitFor(
    async () => (await user.get("/api/drones")).body.drones[0]?.status === "online",
    5_000,
    "the drone online",
  );
  return { user, drone, droneId, ...workspace };
}

type Fleet = Awaited<ReturnType<typeof fleetUser>>;

/** Queues a turn and waits until its drone has accepted the work order. */
async function startTurn(fleet: Fleet, prompt: string): Promise<string> {
  const posted = await fleet.user.post(`/api/sessions/${fleet.sessionId}/turns`, {
    prompt,
    providerId: fleet.providerId,
  });
  expect(posted.status).toBe(202);
  const order = await fleet.drone.nextWorkOrder();
  expect(order.turnId).toBe(posted.body.turn._id);
  return order.turnId;
}

async function turnStatus(fleet: Fleet, turnId: string): Promise<string> {
  return (await fleet.user.get(`/api/turns/${turnId}`)).body.turn.status;
}

/** An answer with the turn's id taken out, so answers about different turns can be compared. */
const withoutId = (answer: Ack, turnId: string) =>
  JSON.parse(JSON.stringify(answer).replaceAll(turnId, "<turn>"));

describe("finding 10: a hostile drone learns nothing about turns it does not hold", () => {
  it("batches and checkpoints for another user's turn, its own finished turn and a made-up id all get the same refusal", async () => {
    const attacker = await fleetUser("hostile");
    const victim = await fleetUser("victim");

    // The victim's turn runs on the victim's drone.
    const running = await startTurn(victim, "secret work");
    await victim.drone.stream(running, [agentEvent("token", { text: "victim's words" })]);
    await waitFor(
      async () => (await turnStatus(victim, running)) === "processing",
      5_000,
      "the victim's turn processing",
    );

    // The attacker's own turn, finished.
    const finished = await startTurn(attacker, "my own turn");
    const done = await attacker.drone.stream(finished, [
      agentEvent("response", { message: "ok" }),
      agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }),
    ]);
    expect(done.ok).toBe(true);
    await waitFor(
      async () => (await turnStatus(attacker, finished)) === "completed",
      5_000,
      "completed",
    );

    const missing = randomBytes(12).toString("hex");
    const targets = { running, finished, missing };
    const batches: Record<string, unknown> = {};
    const checkpoints: Record<string, unknown> = {};
    for (const [label, turnId] of Object.entries(targets)) {
      const batch = await attacker.drone.sendBatch(turnId, [
        { ...agentEvent("token", { text: "injected by a hostile drone" }), seq: 1_000 },
      ]);
      expect(batch.ok).toBe(false);
      batches[label] = withoutId(batch, turnId);
      const checkpoint = await attacker.drone.checkpoint(turnId, [
        { role: "assistant", content: "injected by a hostile drone", createdAt: new Date() },
      ]);
      expect(checkpoint.ok).toBe(false);
      checkpoints[label] = withoutId(checkpoint, turnId);
    }

    const refusal = {
      ok: false,
      error: {
        code: "forbidden",
        message: "This drone does not hold turn <turn>; stop working on it",
        details: { turnId: "<turn>" },
      },
    };
    expect(batches).toEqual({ running: refusal, finished: refusal, missing: refusal });
    expect(checkpoints).toEqual({ running: refusal, finished: refusal, missing: refusal });
    expect(JSON.stringify([batches, checkpoints])).not.toMatch(
      /processing|completed|unknown|not found|status/i,
    );

    // Nothing of the attack reached the victim's turn.
    const events = (await victim.user.get(`/api/turns/${running}/events`)).body.events;
    expect(JSON.stringify(events)).not.toContain("injected");
    const stored = await fixture.server.context.models.ChatTurn.findById(running).lean();
    expect(JSON.stringify(stored?.messages ?? [])).not.toContain("injected");
    expect(await turnStatus(victim, running)).toBe("processing");
  });
});

describe("finding 10: a revoked drone never comes back", () => {
  it("a drone flooding heartbeats while it is revoked stays out of presence and is never dispatched to", async () => {
    const fleet = await fleetUser("revoked", { heartbeatMs: 0 });
    const { presence } = fixture.server.context;

    // Answered while the drone is trusted.
    expect((await fleet.drone.heartbeat([])).ok).toBe(true);
    // Then heartbeats without waiting for their answers, during and after the revocation, until
    // the server drops the socket (however long a loaded machine takes to get there).
    const beats: Array<Promise<string>> = [];
    let revocation: Promise<{ status: number }> | null = null;
    const deadline = Date.now() + 20_000;
    for (let index = 0; fleet.drone.connected && Date.now() < deadline; index++) {
      beats.push(
        fleet.drone.heartbeat([]).then(
          (answer) => (answer.ok ? "ok" : answer.error.code),
          () => "no answer",
        ),
      );
      if (index === 30) revocation = fleet.user.delete(`/api/drones/${fleet.droneId}`);
      if (index % 10 === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    }
    expect((await revocation)?.status).toBe(204);
    await fleet.drone.waitForDisconnect(5_000);
    const outcomes = await Promise.all(beats);
    // The flood ran into the revocation: its last heartbeats were not answered.
    expect(outcomes.some((outcome) => outcome !== "ok")).toBe(true);
    // Handlers the server received before the disconnect may still be running.
    await sleep(300);

    const [state] = await presence.read([fleet.droneId]);
    expect(state?.online).toBe(false);
    expect(state?.socketId ?? null).toBeNull();
    const listed = (await presence.ofUser(fleet.user.userId)).map((drone) => drone.droneId);
    expect(listed).not.toContain(fleet.droneId);
    // What a late heartbeat or a racing connection would do, refused.
    const revived = await presence.connect(fleet.droneId, {
      userId: fleet.user.userId,
      name: "revoked-drone",
      serverId: fixture.server.context.config.serverId,
      socketId: "late-socket",
      capacity: 1,
      labels: [],
      workspaces: [],
    });
    expect(revived).toBe(false);
    expect((await presence.read([fleet.droneId]))[0]?.online).toBe(false);
    expect((await presence.ofUser(fleet.user.userId)).map((drone) => drone.droneId)).not.toContain(
      fleet.droneId,
    );

    // Work queued afterwards waits for a drone; the revoked one is never chosen.
    const posted = await fleet.user.post(`/api/sessions/${fleet.sessionId}/turns`, {
      prompt: "after revocation",
      providerId: fleet.providerId,
    });
    expect(posted.status).toBe(202);
    const turnId = posted.body.turn._id;
    await sleep(1_200);
    expect(await turnStatus(fleet, turnId)).toBe("queued");
    const events = (await fleet.user.get(`/api/turns/${turnId}/events`)).body.events as Array<{
      type: string;
    }>;
    expect(events.map((event) => event.type)).not.toContain("dispatched");
    expect(fleet.drone.workOrders).toHaveLength(0);
    expect((await fleet.user.get("/api/drones")).body.drones).toHaveLength(0);
  });
});
