// A project's forge over real HTTP and a real database: the token is sealed at rest, never
// answered, validated at the edge, removable; it travels only in a pull-request project's work
// orders, and the pull request a turn's delivery opened comes back in the session's next order.
import { agentEvent } from "@gadget/protocol";
import { Types } from "mongoose";
import { describe, expect, it } from "vitest";
import { registerDrone, setupWorkspace, signup, waitFor } from "../testing/api-client.ts";
import { ScriptedDrone } from "../testing/scripted-drone.ts";
import { useTestServer } from "../testing/use-test-server.ts";

const fixture = useTestServer();
const token = "ghp_forgeTokenNeverShown0123456789";

describe("a project's forge", () => {
  it("seals the token at rest, never returns it, keeps it when only the URL changes, and removes the forge", async () => {
    const user = await signup(fixture.server.url, "forge");
    const { projectId } = await setupWorkspace(user);
    const set = await user.patch(`/api/projects/${projectId}`, {
      delivery: "pull-request",
      forge: { kind: "github", apiUrl: "https://api.github.com", token },
    });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body.project.forge).toEqual({
      kind: "github",
      apiUrl: "https://api.github.com",
      hasToken: true,
      events: null,
      hasEventsSecret: false,
    });
    for (const answer of [set.body, (await user.get("/api/projects")).body]) {
      expect(JSON.stringify(answer)).not.toContain(token);
    }
    // The raw document, as the database holds it.
    const { models, secretBox } = fixture.server.context;
    const raw = await models.Project.collection.findOne({ _id: new Types.ObjectId(projectId) });
    expect(JSON.stringify(raw)).not.toContain(token);
    expect(raw?.forge.tokenEncrypted).toMatch(/^v1:/);
    expect(secretBox.open(raw?.forge.tokenEncrypted)).toBe(token);

    // A new API URL without a token keeps the sealed one.
    const moved = await user.patch(`/api/projects/${projectId}`, {
      forge: { kind: "github", apiUrl: "https://github.example.com/api/v3" },
    });
    expect(moved.status).toBe(200);
    expect(moved.body.project.forge).toEqual({
      kind: "github",
      apiUrl: "https://github.example.com/api/v3",
      hasToken: true,
      events: null,
      hasEventsSecret: false,
    });
    const kept = await models.Project.findById(projectId).lean();
    expect(secretBox.open(kept?.forge?.tokenEncrypted ?? "")).toBe(token);

    const removed = await user.patch(`/api/projects/${projectId}`, { forge: null });
    expect(removed.status).toBe(200);
    expect(removed.body.project.forge).toBeNull();
    expect((await models.Project.findById(projectId).lean())?.forge).toBeNull();
  });

  it("refuses a bad forge with 400 naming the field, and a first forge without a token", async () => {
    const user = await signup(fixture.server.url, "forge-invalid");
    const { projectId } = await setupWorkspace(user);
    for (const [forge, field] of [
      [{ kind: "bitbucket", apiUrl: "https://api.bitbucket.org", token }, "forge.kind"],
      [{ kind: "github", apiUrl: "ftp://api.github.com", token }, "forge.apiUrl"],
      [{ kind: "github", apiUrl: "javascript:alert(1)", token }, "forge.apiUrl"],
      [{ kind: "github", apiUrl: "https://me:pw@api.github.com", token }, "forge.apiUrl"],
      [{ kind: "github", apiUrl: "https://api.github.com", token: "" }, "forge.token"],
      [{ kind: "github", apiUrl: "https://api.github.com", token: 42 }, "forge.token"],
      [{ kind: "gitlab", token }, "forge.apiUrl"],
      [{ kind: "github", apiUrl: "https://api.github.com", token, owner: "x" }, "forge"],
    ] as const) {
      const refused = await user.patch(`/api/projects/${projectId}`, { forge });
      expect(refused.status, JSON.stringify(forge)).toBe(400);
      expect(
        refused.body.error.details.map((issue: { path: string }) => issue.path),
        JSON.stringify(forge),
      ).toContain(field);
    }
    const tokenless = await user.patch(`/api/projects/${projectId}`, {
      forge: { kind: "gitlab", apiUrl: "https://gitlab.com/api/v4" },
    });
    expect(tokenless.status).toBe(400);
    expect(tokenless.body.error.message).toContain("forge.token is required");
    expect((await user.get("/api/projects")).body.projects[0].forge).toBeNull();
    // Creating a project with a forge seals it the same way.
    const created = await user.post("/api/projects", {
      name: "With forge",
      gitUrl: "https://gitlab.com/group/sub/app.git",
      forge: { kind: "gitlab", apiUrl: "https://gitlab.com/api/v4", token },
    });
    expect(created.status).toBe(201);
    expect(created.body.project.forge).toEqual({
      kind: "gitlab",
      apiUrl: "https://gitlab.com/api/v4",
      hasToken: true,
      events: null,
      hasEventsSecret: false,
    });
    expect(JSON.stringify(created.body)).not.toContain(token);
    // Gitea (and Forgejo), whose API is under /api/v1.
    const gitea = await user.patch(`/api/projects/${projectId}`, {
      forge: { kind: "gitea", apiUrl: "https://codeberg.org/api/v1", token },
    });
    expect(gitea.status, JSON.stringify(gitea.body)).toBe(200);
    expect(gitea.body.project.forge).toEqual({
      kind: "gitea",
      apiUrl: "https://codeberg.org/api/v1",
      hasToken: true,
      events: null,
      hasEventsSecret: false,
    });
  });

  it("sends the token only in a pull-request project's work orders, and the session's pull request in later ones", async () => {
    const user = await signup(fixture.server.url, "forge-orders");
    const { projectId, sessionId, providerId } = await setupWorkspace(user);
    const { droneId, credential } = await registerDrone(user, { name: "forge-drone" });
    const drone = await ScriptedDrone.connect({ url: fixture.server.url, droneId, credential });
    fixture.drones.push(drone);
    await user.patch(`/api/projects/${projectId}`, {
      delivery: "branch",
      forge: { kind: "github", apiUrl: "https://api.github.com", token },
    });
    const runTurn = async (prompt: string, events: ReturnType<typeof agentEvent>[]) => {
      const posted = await user.post(`/api/sessions/${sessionId}/turns`, { prompt, providerId });
      const turnId = posted.body.turn._id;
      const order = await drone.nextWorkOrder();
      expect(order.turnId).toBe(turnId);
      await drone.stream(turnId, [
        ...events,
        agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }),
      ]);
      await waitFor(
        async () => (await user.get(`/api/turns/${turnId}`)).body.turn.status === "completed",
      );
      return { order, turnId };
    };

    const branchOnly = await runTurn("Push it", []);
    expect(branchOnly.order.project.forge).toBeUndefined();
    expect(branchOnly.order.session.pullRequest).toBeUndefined();

    await user.patch(`/api/projects/${projectId}`, { delivery: "pull-request" });
    const url = "https://github.com/ada/app/pull/7";
    const opened = await runTurn("Open it", [
      agentEvent("delivery", {
        branch: "gadget/session-abc123",
        commit: "a".repeat(40),
        pushed: true,
        pullRequestUrl: url,
        pullRequestNumber: 7,
      }),
    ]);
    expect(opened.order.project.forge).toEqual({
      kind: "github",
      apiUrl: "https://api.github.com",
      token,
    });
    expect(opened.order.session.pullRequest).toBeUndefined();
    const turn = (await user.get(`/api/turns/${opened.turnId}`)).body.turn;
    expect(turn.delivery).toMatchObject({ pullRequestUrl: url, error: null });
    // The token is in no event of the turn.
    const events = (await user.get(`/api/turns/${opened.turnId}/events`)).body;
    expect(JSON.stringify(events)).not.toContain(token);

    const later = await runTurn("Update it", []);
    expect(later.order.session.pullRequest).toEqual({ url, number: 7 });
  });
});
