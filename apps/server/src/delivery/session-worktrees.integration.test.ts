// GET /api/sessions/:id: the session's branch from its turns, and where its worktree stands as the
// drone holding it says; nothing of another user's session.
import type { SessionWorktreeRequest } from "@gadget/protocol";
import { agentEvent } from "@gadget/protocol";
import { describe, expect, it } from "vitest";
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

async function connect(options: Omit<ScriptedDroneOptions, "url">) {
  const drone = await ScriptedDrone.connect({ url: fixture.server.url, ...options });
  fixture.drones.push(drone);
  return drone;
}

describe("GET /api/sessions/:id", () => {
  it("says the session's branch and where its worktree stands on the drone holding it", async () => {
    const user = await signup(fixture.server.url, "worktree-state");
    const workspace = await setupWorkspace(user);
    const fresh = await user.get(`/api/sessions/${workspace.sessionId}`);
    expect(fresh.status).toBe(200);
    expect(fresh.body.session).toMatchObject({
      _id: workspace.sessionId,
      project: workspace.projectId,
      name: "Session",
      branch: null,
      worktree: null,
    });

    // A drone that ran a turn of the session, then went quiet about its worktree.
    const asked: SessionWorktreeRequest[] = [];
    let holding = false;
    const registered = await registerDrone(user, { name: "holder" });
    const drone = await connect({
      droneId: registered.droneId,
      credential: registered.credential,
      workspaces: [workspace.projectSlug],
      onSessionWorktree: (request) => {
        asked.push(request);
        return holding
          ? {
              ok: true,
              result: {
                branch: "gadget/session-abc123",
                head: "1234567890abcdef1234567890abcdef12345678",
                base: "origin/main",
                ahead: 2,
                behind: 1,
                dirty: true,
              },
            }
          : {
              ok: false,
              error: { code: "not_found", message: "This drone holds no worktree of the session" },
            };
      },
    });
    await waitForDrones(user, "online");
    const posted = await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
      prompt: "Change a file",
      providerId: workspace.providerId,
    });
    const order = await drone.nextWorkOrder();
    expect(order.turnId).toBe(posted.body.turn._id);
    await drone.stream(order.turnId, [
      agentEvent("response", { message: "Changed." }),
      agentEvent("commit", { branch: "gadget/session-abc123", commit: "1234567" }),
      agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }),
    ]);
    await waitFor(
      async () => (await user.get(`/api/turns/${order.turnId}`)).body.turn.status === "completed",
    );
    const turn = (await user.get(`/api/turns/${order.turnId}`)).body.turn;
    expect(turn).toMatchObject({ branch: "gadget/session-abc123", commit: "1234567" });

    const recorded = await user.get(`/api/sessions/${workspace.sessionId}`);
    expect(recorded.body.session).toMatchObject({
      branch: "gadget/session-abc123",
      worktree: null,
    });
    expect(asked).toEqual([{ projectSlug: workspace.projectSlug, sessionId: workspace.sessionId }]);

    holding = true;
    const live = await user.get(`/api/sessions/${workspace.sessionId}`);
    expect(live.body.session).toMatchObject({
      branch: "gadget/session-abc123",
      worktree: {
        ahead: 2,
        behind: 1,
        dirty: true,
        base: "origin/main",
        head: "1234567890abcdef1234567890abcdef12345678",
      },
    });

    const stranger = await signup(fixture.server.url, "worktree-stranger");
    expect((await stranger.get(`/api/sessions/${workspace.sessionId}`)).status).toBe(404);
    expect((await user.get("/api/sessions/not-an-id")).status).toBe(404);
  });

  it("answers without the worktree when the holding drone answers nonsense", async () => {
    const user = await signup(fixture.server.url, "worktree-nonsense");
    const workspace = await setupWorkspace(user);
    const registered = await registerDrone(user, { name: "liar" });
    await connect({
      droneId: registered.droneId,
      credential: registered.credential,
      workspaces: [workspace.projectSlug],
      // A hostile or broken drone: the answer is checked, never passed on.
      onSessionWorktree: () =>
        ({ ok: true, result: { branch: 7, ahead: -1 } }) as unknown as ReturnType<
          NonNullable<ScriptedDroneOptions["onSessionWorktree"]>
        > as never,
    });
    await waitForDrones(user, "online");
    const answer = await user.get(`/api/sessions/${workspace.sessionId}`);
    expect(answer.status).toBe(200);
    expect(answer.body.session).toMatchObject({ branch: null, worktree: null });
  });
});
