// Managing what a user made: providers and sessions changed and deleted, projects deleted with
// everything in them, a project's URL checked and cloned through a drone, and "always allow".
import { agentEvent } from "@gadget/protocol";
import { describe, expect, it } from "vitest";
import {
  type ApiClient,
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

type User = Awaited<ReturnType<typeof signup>>;

async function connect(user: ApiClient, name: string, options: Partial<ScriptedDroneOptions> = {}) {
  const registered = await registerDrone(user, { name });
  const drone = await ScriptedDrone.connect({
    url: fixture.server.url,
    droneId: registered.droneId,
    credential: registered.credential,
    heartbeatMs: 300,
    ...options,
  });
  drones.push(drone);
  await waitFor(
    async () =>
      (await user.get("/api/drones")).body.drones.some(
        (listed: { _id: string; status: string }) =>
          listed._id === registered.droneId && listed.status === "online",
      ),
    10_000,
    "drone online",
  );
  return { drone, droneId: registered.droneId };
}

/** A finished turn of the session, with a few events. */
async function finishedTurn(user: User, workspace: { sessionId: string; providerId: string }) {
  const { drone } = await connect(user, `drone-${Date.now()}`);
  const posted = await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
    prompt: "Work",
    providerId: workspace.providerId,
  });
  const turnId: string = posted.body.turn._id;
  await drone.nextWorkOrder();
  await drone.stream(turnId, [
    agentEvent("token", { text: "done" }),
    agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }),
  ]);
  await waitFor(
    async () => (await user.get(`/api/turns/${turnId}`)).body.turn.status === "completed",
    5_000,
    "completed",
  );
  drone.close();
  await waitForDrones(user, "offline");
  return turnId;
}

/** A turn that stays queued: no drone is online. */
async function queuedTurn(user: User, workspace: { sessionId: string; providerId: string }) {
  const posted = await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
    prompt: "Wait",
    providerId: workspace.providerId,
  });
  expect(posted.body.turn.status).toBe("queued");
  return posted.body.turn._id as string;
}

describe("PATCH and DELETE /api/providers/:id", () => {
  it("changes any field, replaces the key without ever showing it, and validates as create does", async () => {
    const user = await signup(fixture.server.url, "provider-edit");
    const bob = await signup(fixture.server.url, "provider-bob");
    const workspace = await setupWorkspace(user);
    const path = `/api/providers/${workspace.providerId}`;

    const renamed = await user.patch(path, {
      name: "Renamed",
      baseUrl: "http://127.0.0.1:9/v2",
      modelId: "other-model",
      escalationModelId: "big-model",
      apiKey: "sk-new-secret",
    });
    expect(renamed.status).toBe(200);
    expect(renamed.body.provider).toMatchObject({
      name: "Renamed",
      baseUrl: "http://127.0.0.1:9/v2",
      modelId: "other-model",
      escalationModelId: "big-model",
      hasApiKey: true,
    });
    expect(JSON.stringify(renamed.body)).not.toContain("sk-new-secret");
    const cleared = await user.patch(path, { escalationModelId: null });
    expect(cleared.body.provider.escalationModelId).toBeUndefined();

    // The new key is the one a turn's work order carries.
    const { drone } = await connect(user, "key-drone");
    await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
      prompt: "Which key?",
      providerId: workspace.providerId,
    });
    const order = await drone.nextWorkOrder();
    expect(order.provider).toMatchObject({ apiKey: "sk-new-secret", modelId: "other-model" });
    const listed = await user.get("/api/providers");
    expect(JSON.stringify(listed.body)).not.toContain("sk-new-secret");

    for (const body of [
      { baseUrl: "ftp://example.com" },
      { baseUrl: "https://user:pass@example.com/v1" },
      { modelId: "" },
      { name: "   " },
      { unknownField: 1 },
    ]) {
      const refused = await user.patch(path, body);
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(refused.body.error.code).toBe("validation_failed");
    }
    expect((await bob.patch(path, { name: "Mine" })).status).toBe(404);
    expect((await bob.delete(path)).status).toBe(404);
    expect((await user.patch("/api/providers/not-an-id", { name: "x" })).status).toBe(404);
  });

  it("refuses to delete a provider a queued turn uses (409), then deletes it (204)", async () => {
    const user = await signup(fixture.server.url, "provider-delete");
    const workspace = await setupWorkspace(user);
    const turnId = await queuedTurn(user, workspace);
    const path = `/api/providers/${workspace.providerId}`;
    const busy = await user.delete(path);
    expect(busy.status).toBe(409);
    expect(busy.body.error.code).toBe("conflict");

    await user.post(`/api/turns/${turnId}/cancel`);
    await waitFor(
      async () => (await user.get(`/api/turns/${turnId}`)).body.turn.status === "cancelled",
      5_000,
      "cancelled",
    );
    expect((await user.delete(path)).status).toBe(204);
    expect((await user.get("/api/providers")).body.providers).toEqual([]);
    expect((await user.patch(path, { name: "x" })).status).toBe(404);
    expect((await user.delete(path)).status).toBe(404);
    // A new turn cannot name it any more.
    const turn = await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
      prompt: "x",
      providerId: workspace.providerId,
    });
    expect(turn.status).toBe(404);
  });
});

describe("PATCH and DELETE /api/sessions/:id", () => {
  it("renames a session, changes its mode and approval, and sets its allowed commands", async () => {
    const user = await signup(fixture.server.url, "session-edit");
    const bob = await signup(fixture.server.url, "session-bob");
    const workspace = await setupWorkspace(user);
    const path = `/api/sessions/${workspace.sessionId}`;
    const changed = await user.patch(path, {
      name: "Renamed session",
      mode: "ask",
      approval: "on-write",
      allowedCommands: ["npm test", "npm test", "node test.js"],
    });
    expect(changed.status).toBe(200);
    expect(changed.body.session).toMatchObject({
      name: "Renamed session",
      mode: "ask",
      approval: "on-write",
      allowedCommands: ["npm test", "node test.js"],
    });
    expect((await user.get(path)).body.session.name).toBe("Renamed session");
    const removed = await user.patch(path, { allowedCommands: ["node test.js"] });
    expect(removed.body.session.allowedCommands).toEqual(["node test.js"]);

    for (const body of [{ mode: "chaos" }, { approval: "never" }, { name: "" }, { project: "x" }]) {
      expect((await user.patch(path, body)).status, JSON.stringify(body)).toBe(400);
    }
    expect((await bob.patch(path, { name: "Mine" })).status).toBe(404);
    expect((await bob.delete(path)).status).toBe(404);
    expect((await user.get(path)).body.session.name).toBe("Renamed session");
  });

  it("deletes a session with its turns and events (409 while a turn is queued); nothing stays readable", async () => {
    const user = await signup(fixture.server.url, "session-delete");
    const workspace = await setupWorkspace(user);
    const finished = await finishedTurn(user, workspace);
    expect((await user.get(`/api/turns/${finished}/events`)).body.events.length).toBeGreaterThan(0);
    const queued = await queuedTurn(user, workspace);
    const path = `/api/sessions/${workspace.sessionId}`;
    const busy = await user.delete(path);
    expect(busy.status).toBe(409);
    expect(busy.body.error.message).toMatch(/queued or running/);

    await user.post(`/api/turns/${queued}/cancel`);
    await waitFor(
      async () => (await user.get(`/api/turns/${queued}`)).body.turn.status === "cancelled",
      5_000,
      "cancelled",
    );
    expect((await user.delete(path)).status).toBe(204);
    for (const read of [
      path,
      `${path}/turns`,
      `/api/turns/${finished}`,
      `/api/turns/${finished}/events`,
      `/api/turns/${finished}/stream`,
      `/api/turns/${queued}`,
    ]) {
      expect((await user.get(read)).status, read).toBe(404);
    }
    expect((await user.post(`/api/turns/${finished}/resume`)).status).toBe(404);
    expect(
      (await user.post(`${path}/turns`, { prompt: "x", providerId: workspace.providerId })).status,
    ).toBe(404);
    expect((await user.get(`/api/projects/${workspace.projectId}/sessions`)).body.sessions).toEqual(
      [],
    );
    expect((await user.delete(path)).status).toBe(404);
  });
});

describe("DELETE /api/projects/:id", () => {
  it("deletes a project with its sessions, turns and events (409 while a turn is queued)", async () => {
    const user = await signup(fixture.server.url, "project-delete");
    const bob = await signup(fixture.server.url, "project-bob");
    const workspace = await setupWorkspace(user);
    const other = await user.post(`/api/projects/${workspace.projectId}/sessions`, {
      name: "Second",
    });
    const finished = await finishedTurn(user, workspace);
    const queued = await queuedTurn(user, { ...workspace, sessionId: other.body.session._id });
    const path = `/api/projects/${workspace.projectId}`;
    expect((await bob.delete(path)).status).toBe(404);
    expect((await user.delete(path)).status).toBe(409);

    await user.post(`/api/turns/${queued}/cancel`);
    await waitFor(
      async () => (await user.get(`/api/turns/${queued}`)).body.turn.status === "cancelled",
      5_000,
      "cancelled",
    );
    expect((await user.delete(path)).status).toBe(204);
    expect((await user.get("/api/projects")).body.projects).toEqual([]);
    for (const read of [
      `${path}/sessions`,
      `${path}/files`,
      `/api/sessions/${workspace.sessionId}`,
      `/api/sessions/${other.body.session._id}`,
      `/api/sessions/${workspace.sessionId}/turns`,
      `/api/turns/${finished}`,
      `/api/turns/${finished}/events`,
      `/api/turns/${queued}`,
    ]) {
      expect((await user.get(read)).status, read).toBe(404);
    }
    expect((await user.patch(path, { name: "Back" })).status).toBe(404);
    expect((await user.post(`${path}/clone`)).status).toBe(404);
    expect((await user.delete(path)).status).toBe(404);
    // The provider is the user's own, not the project's: it stays.
    expect((await user.get("/api/providers")).body.providers).toHaveLength(1);
  });
});

describe("a project's git URL and Clone now, through a drone", () => {
  it("checks the URL through an online drone, refusing one that does not answer (400)", async () => {
    const user = await signup(fixture.server.url, "url-check");
    const unchecked = await user.post("/api/projects", {
      name: "Unchecked",
      gitUrl: "https://example.com/a.git",
    });
    expect(unchecked.status).toBe(201);
    expect(unchecked.body.gitUrlCheck).toMatchObject({ checked: false });
    expect(unchecked.body.gitUrlCheck.message).toMatch(/no drone/i);

    const { drone } = await connect(user, "checker", {
      onGitRemoteCheck: ({ gitUrl }) =>
        gitUrl.includes("missing")
          ? {
              ok: true,
              result: { ok: false, problem: "not_found", message: "No repository at this URL" },
            }
          : { ok: true, result: { ok: true, defaultBranch: "trunk" } },
    });
    const checked = await user.post("/api/projects", {
      name: "Checked",
      gitUrl: "https://example.com/b.git",
    });
    expect(checked.status).toBe(201);
    expect(checked.body.gitUrlCheck).toMatchObject({
      checked: true,
      drone: "checker",
      defaultBranch: "trunk",
    });
    const missing = await user.post("/api/projects", {
      name: "Missing",
      gitUrl: "https://example.com/missing.git",
    });
    expect(missing.status).toBe(400);
    expect(missing.body.error.message).toContain("No repository at this URL");
    expect(missing.body.error.details[0]).toMatchObject({ path: "gitUrl", problem: "not_found" });
    expect(drone.remoteChecks.map((request) => request.gitUrl)).toEqual([
      "https://example.com/b.git",
      "https://example.com/missing.git",
    ]);
    expect(
      (await user.get("/api/projects")).body.projects.map((p: { name: string }) => p.name),
    ).toEqual(["Unchecked", "Checked"]);
  });

  it("clones a project now on a drone (503 with none online, 400 when the clone fails)", async () => {
    const user = await signup(fixture.server.url, "clone-now");
    const bob = await signup(fixture.server.url, "clone-bob");
    const workspace = await setupWorkspace(user);
    const path = `/api/projects/${workspace.projectId}/clone`;
    const offline = await user.post(path);
    expect(offline.status).toBe(503);
    expect(offline.body.error.code).toBe("no_drone_online");

    let fail = false;
    const { drone, droneId } = await connect(user, "cloner", {
      onProjectClone: () =>
        fail
          ? {
              ok: false,
              error: { code: "clone_failed", message: "Could not clone: repository not found" },
            }
          : { ok: true, result: { outcome: "cloned", message: "Cloned it", branch: "main" } },
    });
    const cloned = await user.post(path);
    expect(cloned.status).toBe(200);
    expect(cloned.body).toMatchObject({
      outcome: "cloned",
      branch: "main",
      drone: { _id: droneId, name: "cloner" },
    });
    expect(drone.cloneRequests).toEqual([
      { projectSlug: workspace.projectSlug, gitUrl: "https://example.com/demo.git" },
    ]);
    fail = true;
    const failed = await user.post(path);
    expect(failed.status).toBe(400);
    expect(failed.body.error.message).toContain("repository not found");
    expect((await bob.post(path)).status).toBe(404);
  });
});

describe("always allow a command in a session", () => {
  it("stores the approved command on the session, tells the drone, and sends it with the next work order", async () => {
    const user = await signup(fixture.server.url, "always-allow");
    const workspace = await setupWorkspace(user, { approval: "on-write" });
    const { drone } = await connect(user, "approver");
    const posted = await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
      prompt: "Test it",
      providerId: workspace.providerId,
    });
    const turnId: string = posted.body.turn._id;
    const first = await drone.nextWorkOrder();
    expect(first.session.allowedCommands).toEqual([]);
    await drone.stream(turnId, [
      agentEvent("approval", {
        approvals: [
          {
            id: "ap-1",
            callId: "c1",
            tool: "run_command",
            params: { command: "node test.js" },
            description: "Run node test.js",
          },
          {
            id: "ap-2",
            callId: "c2",
            tool: "write_file",
            params: { path: "a.txt" },
            description: "Write a.txt",
          },
        ],
      }),
    ]);
    await waitFor(
      async () => (await user.get(`/api/turns/${turnId}`)).body.turn.status === "awaiting_approval",
      5_000,
      "awaiting approval",
    );
    const notACommand = await user.post(`/api/turns/${turnId}/approvals/ap-2`, {
      approve: true,
      alwaysAllow: true,
    });
    expect(notACommand.status).toBe(400);
    const declinedForGood = await user.post(`/api/turns/${turnId}/approvals/ap-1`, {
      approve: false,
      alwaysAllow: true,
    });
    expect(declinedForGood.status).toBe(400);

    const allowed = await user.post(`/api/turns/${turnId}/approvals/ap-1`, {
      approve: true,
      alwaysAllow: true,
    });
    expect(allowed.status).toBe(200);
    expect(drone.approvalDecisions).toEqual([
      { turnId, approvalId: "ap-1", approve: true, alwaysAllow: true },
    ]);
    const session = await user.get(`/api/sessions/${workspace.sessionId}`);
    expect(session.body.session.allowedCommands).toEqual(["node test.js"]);

    await user.post(`/api/turns/${turnId}/approvals/ap-2`, { approve: true });
    await drone.stream(turnId, [
      agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }),
    ]);
    await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
      prompt: "Again",
      providerId: workspace.providerId,
    });
    const next = await drone.nextWorkOrder();
    expect(next.session.allowedCommands).toEqual(["node test.js"]);
  });
});
