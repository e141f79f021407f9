// Every server restarted while a turn runs: its lease lapses with no server up to see the drone,
// and the first server back must let the drone reconnect within the grace instead of
// interrupting the turn on its first sweep (a loaded CI machine once took 10 s to restart one).
import { agentEvent } from "@gadget/protocol";
import { afterAll, describe, expect, inject, it } from "vitest";
import type { GadgetServer } from "../server.ts";
import { registerDrone, setupWorkspace, signup, waitFor } from "../testing/api-client.ts";
import { ScriptedDrone } from "../testing/scripted-drone.ts";
import { startTestServer, uniqueName } from "../testing/test-server.ts";

const name = uniqueName("restart");
// Presence goes stale within the outage too, as it does in production for one longer than 45 s.
const options = {
  mongoUrl: inject("mongoUrl"),
  redisUrl: inject("redisUrl"),
  droneGraceMs: 2_000,
  presenceStaleMs: 1_000,
  // A dispatch's lease is this plus the grace: lapsed within the outage below.
  workOrderAckTimeoutMs: 1_000,
};
const servers: GadgetServer[] = [];
const drones: ScriptedDrone[] = [];

afterAll(async () => {
  for (const drone of drones) drone.close();
  for (const server of servers) await server.close().catch(() => undefined);
});

describe("every server restarted mid-turn", () => {
  it("keeps the turn for the drone that reconnects within the grace after the first server is back", async () => {
    const first = await startTestServer(options, name);
    servers.push(first);
    const user = await signup(first.url, "restart");
    const workspace = await setupWorkspace(user);
    const registered = await registerDrone(user);
    const drone = await ScriptedDrone.connect({ url: first.url, ...registered, heartbeatMs: 200 });
    drones.push(drone);
    const posted = await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
      prompt: "Work through a restart",
      providerId: workspace.providerId,
    });
    const turnId: string = posted.body.turn._id;
    await drone.nextWorkOrder();
    await drone.stream(turnId, [agentEvent("token", { text: "before " })]);

    // No server for longer than the grace: the turn's lease lapses while nobody can see the drone.
    const { port } = first;
    await first.close();
    servers.splice(servers.indexOf(first), 1);
    await new Promise((resolve) => setTimeout(resolve, 3_500));
    const second = await startTestServer({ ...options, port }, name);
    servers.push(second);
    // A drone's reconnect backoff: several of the new server's sweeps (every 150 ms) pass first.
    await new Promise((resolve) => setTimeout(resolve, 700));
    const back = await drone.reconnect({ url: second.url });
    drones.push(back);
    const ack = await back.stream(turnId, [
      agentEvent("token", { text: "after" }),
      agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }),
    ]);
    expect(ack.ok, JSON.stringify(ack)).toBe(true);
    const turn = await waitFor(
      async () => {
        const read = (await user.get(`/api/turns/${turnId}`)).body.turn;
        return read.status === "processing" ? null : read;
      },
      10_000,
      "the turn to end",
    );
    expect(turn.status, JSON.stringify(turn.error)).toBe("completed");
    const events = (await user.get(`/api/turns/${turnId}/events?after=0&limit=1000`)).body
      .events as Array<{ seq: number; type: string; data: { text?: string } }>;
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    expect(
      events
        .filter((event) => event.type === "token")
        .map((event) => event.data.text)
        .join(""),
    ).toBe("before after");
  });
});
