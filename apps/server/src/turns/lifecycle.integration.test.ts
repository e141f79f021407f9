// Turn ownership and control: leases across disconnects, interruption and resume, cancel, approvals.
import { agentEvent } from "@gadget/protocol";
import { Types } from "mongoose";
import { describe, expect, it } from "vitest";
import { registerDrone, setupWorkspace, signup, waitFor } from "../testing/api-client.ts";
import { ScriptedDrone, type ScriptedDroneOptions } from "../testing/scripted-drone.ts";
import { useTestServer } from "../testing/use-test-server.ts";

const fixture = useTestServer({ droneGraceMs: 1_200 });
const drones = fixture.drones;

async function connect(options: Omit<ScriptedDroneOptions, "url">) {
  const drone = await ScriptedDrone.connect({
    url: fixture.server.url,
    heartbeatMs: 300,
    ...options,
  });
  drones.push(drone);
  return drone;
}

async function runningTurn(name: string, options: { approval?: "on-write" } = {}) {
  const user = await signup(fixture.server.url, name);
  const workspace = await setupWorkspace(user, options);
  const registered = await registerDrone(user, { name: `${name}-drone` });
  const drone = await connect({ droneId: registered.droneId, credential: registered.credential });
  const posted = await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
    prompt: "Work",
    providerId: workspace.providerId,
  });
  const turnId: string = posted.body.turn._id;
  const order = await drone.nextWorkOrder();
  await drone.stream(turnId, [agentEvent("status", { message: "Pass 1", pass: 1 })]);
  // The first events move the turn to `processing` on a later flush (spread, see 0015).
  await waitFor(async () => (await status(user, turnId)) === "processing", 5_000, "processing");
  return { user, workspace, registered, drone, turnId, order };
}

const status = async (user: Awaited<ReturnType<typeof signup>>, turnId: string) =>
  (await user.get(`/api/turns/${turnId}`)).body.turn.status as string;

describe("leases", () => {
  it("a drone that reconnects within the grace period goes on streaming the same turn", async () => {
    const { user, drone, turnId } = await runningTurn("grace");
    drone.close();
    await new Promise((resolve) => setTimeout(resolve, 600));
    const back = await drone.reconnect();
    drones.push(back);
    // Longer than the grace period after the disconnect: the reconnect kept the lease.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await status(user, turnId)).toBe("processing");
    const ack = await back.stream(turnId, [
      agentEvent("response", { message: "still here" }),
      agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }),
    ]);
    expect(ack.ok).toBe(true);
    expect((await user.get(`/api/turns/${turnId}`)).body.turn).toMatchObject({
      status: "completed",
      response: "still here",
    });
  });

  it("a drone gone beyond the grace period leaves the turn interrupted; resume continues it elsewhere", async () => {
    const { user, registered, drone, turnId } = await runningTurn("lapse");
    const messages = [
      { role: "system" as const, content: "You are Gadget.", createdAt: new Date() },
      { role: "user" as const, content: "Work", createdAt: new Date() },
      {
        role: "assistant" as const,
        content: "",
        createdAt: new Date(),
        toolCalls: [{ id: "c1", name: "read_file", arguments: '{"path":"a"}' }],
      },
      {
        role: "tool" as const,
        content: "contents",
        toolCallId: "c1",
        name: "read_file",
        createdAt: new Date(),
      },
    ];
    expect((await drone.checkpoint(turnId, messages, { pass: 1 })).ok).toBe(true);
    await drone.stream(turnId, [agentEvent("token", { text: "partial" })]);
    drone.close();

    await waitFor(
      async () => (await status(user, turnId)) === "interrupted",
      10_000,
      "interrupted",
    );
    const turn = (await user.get(`/api/turns/${turnId}`)).body.turn;
    expect(turn.exitReason).toBe("interrupted");
    // The turn says why it stopped: its drone did not come back in time.
    expect(turn.error).toMatchObject({
      code: "interrupted",
      message: expect.stringMatching(/did not come back/),
    });
    const events = (await user.get(`/api/turns/${turnId}/events`)).body.events;
    expect(events.map((event: { type: string }) => event.type)).toEqual([
      "queued",
      "dispatched",
      "status",
      "token",
      // Said as soon as the connection dropped, with the time the turn waits for it.
      "drone_lost",
      "status",
      "error",
      "done",
    ]);
    expect(events.at(-1).data.reason).toBe("interrupted");

    const resumed = await user.post(`/api/turns/${turnId}/resume`);
    expect(resumed.status).toBe(202);
    expect(resumed.body.turn.status).toBe("queued");
    const other = await registerDrone(user, { name: "other" });
    const otherDrone = await connect({ droneId: other.droneId, credential: other.credential });
    const order = await otherDrone.nextWorkOrder();
    expect(order.turnId).toBe(turnId);
    // After the events: `status` (retry), `queued` and `dispatched`.
    expect(order.nextSeq).toBe(events.length + 4);
    expect(order.resume?.messages.map((message) => message.role)).toEqual([
      "system",
      "user",
      "assistant",
      "tool",
    ]);
    expect(order.resume?.messages[2]?.toolCalls?.[0]?.id).toBe("c1");
    expect(order.resume?.state).toEqual({ pass: 1 });
    await otherDrone.stream(turnId, [
      agentEvent("done", { reason: "completed", passes: 2, totalCost: 0 }),
    ]);
    expect(await status(user, turnId)).toBe("completed");
    void registered;
  });

  it("a drone that reconnects without the turn (it restarted) is given the turn again", async () => {
    const { user, drone, turnId } = await runningTurn("forgot");
    const back = await drone.reconnect({ activeTurns: [] });
    drones.push(back);
    const order = await back.nextWorkOrder();
    expect(order.turnId).toBe(turnId);
    const events = (await user.get(`/api/turns/${turnId}/events`)).body.events;
    const types = events.map((event: { type: string }) => event.type);
    // The cut pass's streamed text is dropped (`retry`) before the turn goes out again.
    expect(types.slice(-3)).toEqual(["status", "queued", "dispatched"]);
    expect(events.at(-3).data.phase).toBe("retry");
    expect((await user.get(`/api/turns/${turnId}`)).body.turn.status).toBe("dispatched");
  });

  it("a drone that reconnects without the turn leaves it interrupted when the session says off", async () => {
    const { user, workspace, drone, turnId } = await runningTurn("forgot-off");
    const patched = await user.patch(`/api/sessions/${workspace.sessionId}`, { autoResume: "off" });
    expect(patched.body.session.autoResume).toBe("off");
    const back = await drone.reconnect({ activeTurns: [] });
    drones.push(back);
    await waitFor(async () => (await status(user, turnId)) === "interrupted", 5_000, "interrupted");
  });
});

describe("a drone back after the grace, its journal naming the turn", () => {
  /** A running turn whose drone went away for longer than the grace: interrupted. */
  async function lapsed(name: string) {
    const running = await runningTurn(name);
    running.drone.close();
    await waitFor(
      async () => (await status(running.user, running.turnId)) === "interrupted",
      10_000,
      "interrupted",
    );
    return running;
  }

  it("is given the interrupted turn again, once, without a resume call", async () => {
    const { user, drone, turnId } = await lapsed("boomerang");
    const back = await drone.reconnect({ activeTurns: [], journaledTurns: [turnId] });
    drones.push(back);
    const order = await back.nextWorkOrder();
    expect(order.turnId).toBe(turnId);
    const events = (await user.get(`/api/turns/${turnId}/events`)).body.events;
    const types = events.map((event: { type: string }) => event.type);
    expect(types.slice(-5)).toEqual(["error", "done", "status", "queued", "dispatched"]);
    expect(events.at(-3).data.phase).toBe("retry");
    expect(events.at(-2).data.message).toMatch(/came back with this turn; it goes on \(1 of 3/);
  });

  it("is given back to a drone that still runs it, told to drop its run before the work order", async () => {
    const { user, drone, turnId } = await lapsed("still-running");
    const back = await drone.reconnect({ activeTurns: [turnId] });
    drones.push(back);
    const order = await back.nextWorkOrder();
    expect(order.turnId).toBe(turnId);
    expect(back.superseded).toEqual([turnId]);
    expect(back.cancels).toEqual([]);
    const events = (await user.get(`/api/turns/${turnId}/events`)).body.events;
    expect(events.at(-2).data.message).toMatch(/came back with this turn; it goes on \(1 of 3/);
  });

  it("is given back though the drone's list of turns still names it (its mirror lags the turn)", async () => {
    // Drone.activeTurns is updated once the interruption is written, after the turn's lock: a
    // drone back at that moment found the turn there and was told to cancel it instead.
    const models = fixture.server.context.models;
    const running = await lapsed("mirror-running");
    const journaled = await lapsed("mirror-journaled");
    for (const { registered, turnId } of [running, journaled]) {
      await models.Drone.updateOne(
        { _id: registered.droneId },
        { $addToSet: { activeTurns: new Types.ObjectId(turnId) } },
      );
    }
    const [still, restarted] = await Promise.all([
      running.drone.reconnect({ activeTurns: [running.turnId] }),
      journaled.drone.reconnect({ activeTurns: [], journaledTurns: [journaled.turnId] }),
    ]);
    drones.push(still, restarted);
    expect((await still.nextWorkOrder()).turnId).toBe(running.turnId);
    expect(still.superseded).toEqual([running.turnId]);
    expect(still.cancels).toEqual([]);
    expect((await restarted.nextWorkOrder()).turnId).toBe(journaled.turnId);
  });

  it("is cancelled on a drone that still runs it when the session says off", async () => {
    const { user, drone, turnId, workspace } = await lapsed("still-running-off");
    await user.patch(`/api/sessions/${workspace.sessionId}`, { autoResume: "off" });
    const back = await drone.reconnect({ activeTurns: [turnId] });
    drones.push(back);
    await waitFor(() => back.cancels.includes(turnId), 10_000, "the drone told to cancel");
    expect(back.superseded).toEqual([]);
    expect(await status(user, turnId)).toBe("interrupted");
  });

  it("is not given a turn the user stopped, resumed by hand, moved on from, or under off", async () => {
    const stopped = await runningTurn("stopped-meanwhile");
    stopped.drone.close();
    const cancelled = await stopped.user.post(`/api/turns/${stopped.turnId}/cancel`);
    expect(cancelled.body.turn.status).toBe("cancelled");

    const [resumed, movedOn, off] = await Promise.all([
      lapsed("resumed-meanwhile"),
      lapsed("moved-on"),
      lapsed("off-meanwhile"),
    ]);
    expect((await resumed.user.post(`/api/turns/${resumed.turnId}/resume`)).status).toBe(202);
    const later = await movedOn.user.post(`/api/sessions/${movedOn.workspace.sessionId}/turns`, {
      prompt: "Something else",
      providerId: movedOn.workspace.providerId,
    });
    expect(later.status).toBe(202);

    await off.user.patch(`/api/sessions/${off.workspace.sessionId}`, { autoResume: "off" });

    const cases = [
      { ...stopped, expected: "cancelled" },
      // Resumed by hand: queued, then dispatched to the drone again by the usual path.
      { ...resumed, expected: null },
      { ...movedOn, expected: "interrupted" },
      { ...off, expected: "interrupted" },
    ];
    for (const { user, drone, turnId, expected } of cases) {
      const back = await drone.reconnect({ activeTurns: [], journaledTurns: [turnId] });
      drones.push(back);
      // The reconnect is settled (reconciled) once a heartbeat is answered.
      expect((await back.heartbeat([])).ok).toBe(true);
      const events = (await user.get(`/api/turns/${turnId}/events`)).body.events;
      expect(JSON.stringify(events)).not.toMatch(/came back with this turn/);
      if (expected) expect(await status(user, turnId)).toBe(expected);
    }
  }, 60_000);
});

describe("cancel", () => {
  it("is relayed to the drone, which ends the turn as cancelled", async () => {
    const { user, drone, turnId } = await runningTurn("cancel-live");
    const response = await user.post(`/api/turns/${turnId}/cancel`);
    expect(response.status).toBe(202);
    expect(drone.cancels).toEqual([turnId]);
    // Until the drone ends the turn, every heartbeat tells it again.
    const beat = await drone.heartbeat([turnId]);
    expect(beat).toMatchObject({ ok: true, cancelledTurns: [turnId] });
    await drone.stream(turnId, [
      agentEvent("done", { reason: "cancelled", passes: 1, totalCost: 0 }),
    ]);
    expect((await user.get(`/api/turns/${turnId}`)).body.turn).toMatchObject({
      status: "cancelled",
      exitReason: "cancelled",
    });
  });

  it("cancels at once when the turn's drone is gone, and tells the drone when it is back", async () => {
    const { user, drone, turnId } = await runningTurn("cancel-gone");
    drone.close();
    await waitFor(async () => {
      const listed = (await user.get("/api/drones")).body.drones[0];
      return listed.status === "offline";
    });
    const response = await user.post(`/api/turns/${turnId}/cancel`);
    expect(response.status).toBe(202);
    expect(response.body.turn.status).toBe("cancelled");
    const back = await drone.reconnect();
    drones.push(back);
    await waitFor(() => back.cancels.includes(turnId), 5_000, "cancel on reconnect");
  });
  it("tells a drone to stop an interrupted turn once, also when Redis echoes the message late", async () => {
    const { drone, turnId } = await runningTurn("cancel-once");
    // A busy event loop: the Redis adapter's own broadcast comes back after its bookkeeping of
    // it has run out (a millisecond for a message sent without a timeout).
    const busy = setInterval(() => {
      const until = Date.now() + 5;
      while (Date.now() < until);
    }, 1);
    try {
      await fixture.server.turns.finishNow(turnId, "interrupted", "Gone");
      await waitFor(() => drone.cancels.length > 0, 5_000, "the cancel");
      await new Promise((resolve) => setTimeout(resolve, 500));
    } finally {
      clearInterval(busy);
    }
    expect(drone.cancels).toEqual([turnId]);
  });
});

describe("approvals", () => {
  it("shows awaiting_approval while a decision is pending and relays the decision", async () => {
    const { user, drone, turnId, order } = await runningTurn("approve", { approval: "on-write" });
    expect(order.session.approval).toBe("on-write");
    await drone.stream(turnId, [
      agentEvent("approval", {
        approvals: [
          {
            id: "ap-1",
            callId: "c9",
            tool: "write_file",
            params: { path: "a.txt" },
            description: "Write a.txt",
          },
        ],
      }),
    ]);
    expect(await status(user, turnId)).toBe("awaiting_approval");
    expect(
      (await user.post(`/api/turns/${turnId}/approvals/unknown`, { approve: true })).status,
    ).toBe(404);
    const invalid = await user.post(`/api/turns/${turnId}/approvals/ap-1`, { approve: "yes" });
    expect(invalid.status).toBe(400);

    const decided = await user.post(`/api/turns/${turnId}/approvals/ap-1`, { approve: true });
    expect(decided.status).toBe(200);
    expect(drone.approvalDecisions).toEqual([{ turnId, approvalId: "ap-1", approve: true }]);
    expect(decided.body.turn.status).toBe("processing");
    await drone.stream(turnId, [
      agentEvent("tool_start", { callId: "c9", tool: "write_file", params: { path: "a.txt" } }),
      agentEvent("tool_result", { callId: "c9", tool: "write_file", ok: true, summary: "wrote" }),
    ]);
    expect(await status(user, turnId)).toBe("processing");
  });

  it("answers 503 when the drone holding the turn is not connected", async () => {
    const { user, drone, turnId } = await runningTurn("approve-gone", { approval: "on-write" });
    await drone.stream(turnId, [
      agentEvent("approval", {
        approvals: [
          { id: "ap-2", tool: "run_command", params: { command: "ls" }, description: "Run ls" },
        ],
      }),
    ]);
    drone.close();
    await waitFor(async () => (await user.get("/api/drones")).body.drones[0].status === "offline");
    const response = await user.post(`/api/turns/${turnId}/approvals/ap-2`, { approve: false });
    expect(response.status).toBe(503);
    expect(response.body.error.code).toBe("no_drone_online");
    expect(await status(user, turnId)).toBe("awaiting_approval");
  });
});
