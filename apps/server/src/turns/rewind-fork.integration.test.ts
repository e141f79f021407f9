// Rewinding and forking a session's conversation with a scripted drone: rewound turns are marked
// and left out of the next work order's context, a rewind waits for unfinished turns, and a fork
// starts a new session with the turns up to one of them and its branch at that turn's commit, its
// first turn on the drone holding the source's worktree.
import { agentEvent } from "@gadget/protocol";
import { describe, expect, it } from "vitest";
import {
  registerDrone,
  setupWorkspace,
  signup,
  waitFor,
  waitForDroneOnline,
} from "../testing/api-client.ts";
import { ScriptedDrone } from "../testing/scripted-drone.ts";
import { useTestServer } from "../testing/use-test-server.ts";

const fixture = useTestServer();

async function fleetUser(name: string) {
  const user = await signup(fixture.server.url, name);
  const workspace = await setupWorkspace(user);
  const registered = await registerDrone(user, { name: `${name}-drone`, capacity: 2 });
  const drone = await ScriptedDrone.connect({
    url: fixture.server.url,
    droneId: registered.droneId,
    credential: registered.credential,
    capacity: 2,
  });
  fixture.drones.push(drone);
  return { ...workspace, user, drone };
}

type Fleet = Awaited<ReturnType<typeof fleetUser>>;

/** Runs a turn to completion with an answer and a commit; answers its id and work order. */
async function completeTurn(fleet: Fleet, prompt: string, sessionId = fleet.sessionId) {
  const posted = await fleet.user.post(`/api/sessions/${sessionId}/turns`, {
    prompt,
    providerId: fleet.providerId,
  });
  expect(posted.status).toBe(202);
  const order = await fleet.drone.nextWorkOrder();
  await fleet.drone.stream(order.turnId, [
    agentEvent("response", { message: `answer to ${prompt}` }),
    agentEvent("commit", { branch: "gadget/s", commit: `c0ffee${order.turnId.slice(-6)}` }),
    agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }),
  ]);
  await waitFor(
    async () => {
      const { turn } = (await fleet.user.get(`/api/turns/${order.turnId}`)).body;
      return turn.status === "completed";
    },
    5_000,
    `the turn "${prompt}" completed`,
  );
  return order;
}

const contextOf = (order: { context: Array<{ content: string }> }) =>
  order.context.map((message) => message.content);

describe("rewind", () => {
  it("leaves the rewound turns out of the next turn's context, and keeps them readable", async () => {
    const fleet = await fleetUser("rewind-conversation");
    const one = await completeTurn(fleet, "one");
    const two = await completeTurn(fleet, "two");
    const three = await completeTurn(fleet, "three");
    const rewound = await fleet.user.post(`/api/sessions/${fleet.sessionId}/rewind`, {
      turnId: two.turnId,
    });
    expect(rewound.status).toBe(200);
    expect(rewound.body).toMatchObject({ rewound: [two.turnId, three.turnId], code: null });
    const listed = (await fleet.user.get(`/api/sessions/${fleet.sessionId}/turns`)).body.turns;
    expect(listed.map((turn: { rewoundAt: string | null }) => turn.rewoundAt !== null)).toEqual([
      false,
      true,
      true,
    ]);
    expect(listed[1].response).toBe("answer to two");

    const four = await completeTurn(fleet, "four");
    expect(contextOf(four)).toEqual(["one", "answer to one"]);
    expect(one.turnId).not.toBe(four.turnId);
  });

  it("is refused while a turn of the session is unfinished, and for another session's turn", async () => {
    const fleet = await fleetUser("rewind-refused");
    const done = await completeTurn(fleet, "done");
    const running = await fleet.user.post(`/api/sessions/${fleet.sessionId}/turns`, {
      prompt: "running",
      providerId: fleet.providerId,
    });
    await fleet.drone.nextWorkOrder();
    const refused = await fleet.user.post(`/api/sessions/${fleet.sessionId}/rewind`, {
      turnId: done.turnId,
    });
    expect(refused.status).toBe(409);
    expect(refused.body.error.details).toMatchObject({
      reason: "turn_unfinished",
      turnId: running.body.turn._id,
    });
    const other = await setupWorkspace(fleet.user, { projectName: "Other" });
    const elsewhere = await fleet.user.post(`/api/sessions/${other.sessionId}/rewind`, {
      turnId: done.turnId,
    });
    expect(elsewhere.status).toBe(404);
    const stranger = await signup(fixture.server.url, "rewind-stranger");
    expect(
      (await stranger.post(`/api/sessions/${fleet.sessionId}/rewind`, { turnId: done.turnId }))
        .status,
    ).toBe(404);
  });
});

describe("fork", () => {
  it("starts a session with the turns up to one of them, its branch at that turn's commit", async () => {
    const fleet = await fleetUser("fork");
    const one = await completeTurn(fleet, "one");
    await completeTurn(fleet, "two");
    const forked = await fleet.user.post(`/api/sessions/${fleet.sessionId}/fork`, {
      turnId: one.turnId,
      name: "Side road",
    });
    expect(forked.status).toBe(201);
    expect(forked.body.session).toMatchObject({
      name: "Side road",
      forkedFrom: { session: fleet.sessionId, turn: one.turnId },
    });
    const first = await completeTurn(fleet, "side", forked.body.session._id);
    expect(contextOf(first)).toEqual(["one", "answer to one"]);
    expect(first.session).toMatchObject({ startFrom: `c0ffee${one.turnId.slice(-6)}` });
    // The source goes on as it was.
    const source = await completeTurn(fleet, "three");
    expect(contextOf(source)).toEqual(["one", "answer to one", "two", "answer to two"]);
  });

  it("sends the fork's first turn to the drone holding its source's worktree and commit", async () => {
    const fleet = await fleetUser("fork-drone");
    const one = await completeTurn(fleet, "one");
    // Another drone says it holds the project's clone, and the source's drone does not: without
    // the source to go by, dispatch would prefer the other.
    const registered = await registerDrone(fleet.user, { name: "fork-other", capacity: 2 });
    const other = await ScriptedDrone.connect({
      url: fixture.server.url,
      droneId: registered.droneId,
      credential: registered.credential,
      capacity: 2,
      workspaces: [fleet.projectSlug],
    });
    fixture.drones.push(other);
    await waitForDroneOnline(fleet.user, registered.droneId);
    const forked = await fleet.user.post(`/api/sessions/${fleet.sessionId}/fork`, {
      turnId: one.turnId,
    });
    expect(forked.status).toBe(201);
    const first = await completeTurn(fleet, "side", forked.body.session._id);
    expect(first.session).toMatchObject({ startFrom: `c0ffee${one.turnId.slice(-6)}` });
    expect(other.workOrders).toEqual([]);
  });
});
