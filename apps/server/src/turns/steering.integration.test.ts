// Messages to a turn (steering) with scripted drones: stored and sent to the drone holding the
// turn, `delivered` once its `user_message` event is stored (and in later turns' context), sent again after a reconnect, carried
// by the work order of a turn that was still queued, refused for a finished turn, and queued as
// the session's next turn when the turn ends without taking them.
import { agentEvent } from "@gadget/protocol";
import { describe, expect, it } from "vitest";
import {
  type ApiClient,
  registerDrone,
  setupWorkspace,
  signup,
  waitFor,
} from "../testing/api-client.ts";
import { ScriptedDrone } from "../testing/scripted-drone.ts";
import { useTestServer } from "../testing/use-test-server.ts";

const fixture = useTestServer({ droneGraceMs: 10_000 });

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
  return { ...workspace, ...registered, user, drone };
}

async function post(user: ApiClient, sessionId: string, providerId: string, prompt: string) {
  const posted = await user.post(`/api/sessions/${sessionId}/turns`, { prompt, providerId });
  expect(posted.status).toBe(202);
  return posted.body.turn as { _id: string };
}

const statusesOf = async (user: ApiClient, turnId: string) =>
  (await user.get(`/api/turns/${turnId}/messages`)).body.messages.map(
    (message: { status: string }) => message.status,
  );

describe("steering messages", () => {
  it("reaches the drone, is delivered once the turn took it, and is refused once it ended", async () => {
    const { user, drone, sessionId, providerId } = await fleetUser("steer-deliver");
    const turn = await post(user, sessionId, providerId, "Work");
    await drone.nextWorkOrder();

    const posted = await user.post(`/api/turns/${turn._id}/messages`, { text: "Use tabs" });
    expect(posted.status).toBe(202);
    expect(posted.body.message).toMatchObject({ text: "Use tabs", status: "pending" });
    const messageId = posted.body.message._id;
    await waitFor(async () => drone.turnMessages.length > 0, 5_000, "the message on the drone");
    expect(drone.turnMessages[0]).toEqual({
      turnId: turn._id,
      messageId,
      text: "Use tabs",
      interrupt: false,
    });
    expect(await statusesOf(user, turn._id)).toEqual(["pending"]);

    await drone.stream(turn._id, [agentEvent("user_message", { messageId, text: "Use tabs" })]);
    await waitFor(
      async () => (await statusesOf(user, turn._id))[0] === "delivered",
      5_000,
      "the message marked delivered",
    );
    await drone.stream(turn._id, [
      agentEvent("response", { message: "Done with tabs" }),
      agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }),
    ]);
    const late = await user.post(`/api/turns/${turn._id}/messages`, { text: "Too late" });
    expect(late.status).toBe(409);
    expect(late.body.error.code).toBe("conflict");
    expect(await statusesOf(user, turn._id)).toEqual(["delivered"]);
    // Later turns' context holds it where the turn took it: after the prompt, before the answer.
    await post(user, sessionId, providerId, "Next");
    const next = await drone.nextWorkOrder();
    expect(next.context.map((message) => [message.role, message.content])).toEqual([
      ["user", "Work"],
      ["user", "Use tabs"],
      ["assistant", "Done with tabs"],
    ]);
  });

  it("refuses an empty message and nobody else's turn", async () => {
    const { user, sessionId, providerId } = await fleetUser("steer-checks");
    const other = await signup(fixture.server.url, "steer-other");
    const turn = await post(user, sessionId, providerId, "Work");
    expect((await user.post(`/api/turns/${turn._id}/messages`, { text: " " })).status).toBe(400);
    expect((await user.post(`/api/turns/${turn._id}/messages`, {})).status).toBe(400);
    const theirs = await other.post(`/api/turns/${turn._id}/messages`, { text: "hi" });
    expect(theirs.status).toBe(404);
    expect((await other.get(`/api/turns/${turn._id}/messages`)).status).toBe(404);
  });

  it("is sent again to a drone that reconnects with the turn", async () => {
    const { user, drone, sessionId, providerId } = await fleetUser("steer-reconnect");
    const turn = await post(user, sessionId, providerId, "Work");
    await drone.nextWorkOrder();
    drone.close();
    await waitFor(
      async () => {
        const listed = (await user.get("/api/drones")).body.drones;
        return listed[0]?.status === "offline";
      },
      5_000,
      "the drone listed offline",
    );
    const posted = await user.post(`/api/turns/${turn._id}/messages`, {
      text: "While you were away",
      interrupt: true,
    });
    expect(posted.status).toBe(202);
    const back = await drone.reconnect();
    fixture.drones.push(back);
    await waitFor(
      async () => back.turnMessages.length > 0,
      5_000,
      "the message on the returned drone",
    );
    expect(back.turnMessages[0]).toMatchObject({
      messageId: posted.body.message._id,
      text: "While you were away",
      interrupt: true,
    });
  });

  it("travels with the work order of a turn that was still queued", async () => {
    const { user, drone, sessionId, providerId } = await fleetUser("steer-queued");
    const first = await post(user, sessionId, providerId, "First");
    await drone.nextWorkOrder();
    const second = await post(user, sessionId, providerId, "Second");
    const posted = await user.post(`/api/turns/${second._id}/messages`, { text: "Be brief" });
    expect(posted.status).toBe(202);
    await drone.stream(first._id, [
      agentEvent("response", { message: "One" }),
      agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }),
    ]);
    const order = await drone.nextWorkOrder();
    expect(order.turnId).toBe(second._id);
    expect(order.steering).toEqual([
      { messageId: posted.body.message._id, text: "Be brief", interrupt: false },
    ]);
  });

  it("becomes the session's next turn when the turn ends without taking it", async () => {
    const { user, drone, sessionId, providerId } = await fleetUser("steer-leftover");
    const turn = await post(user, sessionId, providerId, "Work");
    await drone.nextWorkOrder();
    const posted = await user.post(`/api/turns/${turn._id}/messages`, { text: "And then this" });
    await drone.stream(turn._id, [
      agentEvent("response", { message: "Worked" }),
      agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }),
    ]);
    const next = await drone.nextWorkOrder();
    expect(next).toMatchObject({ prompt: "And then this" });
    expect(next.context.map((message) => message.content)).toEqual(["Work", "Worked"]);
    const messages = (await user.get(`/api/turns/${turn._id}/messages`)).body.messages;
    expect(messages).toEqual([
      expect.objectContaining({
        _id: posted.body.message._id,
        status: "queued_as_turn",
        turn: next.turnId,
      }),
    ]);
  });
});
