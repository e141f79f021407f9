// Managing a project through a real drone: a new project's git URL checked with `git ls-remote`
// (a bare repository that exists, one that does not, refused credentials never echoed, a remote
// that does not answer), "Clone now" filling the file tree before any turn, and a command the user
// always allowed running without an approval while a different one still asks.
import path from "node:path";
import type { GadgetServer } from "@gadget/server";
import { startTestServer } from "@gadget/server/testing";
import {
  type GitHttpServer,
  makeTempDir,
  type ScriptedModel,
  startGitHttpServer,
  startScriptedModel,
} from "@gadget/testkit";
import { type ApiClient, signup, waitFor } from "@gadget/testkit/wire";
import { Drone } from "gadget-drone";
import { createRemote, droneSandbox } from "gadget-drone/testing";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { quietLogger, turnEvents, waitForDroneOnline, waitForTurn } from "./helpers.ts";

describe("managing a project through a real drone", () => {
  let server: GadgetServer;
  let model: ScriptedModel;
  let user: ApiClient;
  let drone: Drone;
  let http: GitHttpServer;
  let bare: string;
  let providerId: string;
  const password = "s3cret-http-password";

  beforeAll(async () => {
    server = await startTestServer(
      { mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl") },
      `drone_manage_${process.pid}`,
    );
    model = await startScriptedModel();
    user = await signup(server.url, "manage");
    ({ bare } = await createRemote({ "README.md": "# Managed\n", "src.txt": "hello\n" }));
    http = await startGitHttpServer({ root: path.dirname(bare), accounts: { ada: password } });
    providerId = (
      await user.post("/api/providers", {
        name: "m",
        baseUrl: model.baseUrl,
        apiKey: "sk-x",
        modelId: "scripted-model",
      })
    ).body.provider._id;
    const token = await user.post("/api/drones/registration-tokens");
    const registered = await user.post("/api/drones/register", {
      token: token.body.token,
      name: "manager",
      capacity: 1,
    });
    const config = {
      server: server.url,
      droneId: registered.body.drone._id,
      credential: registered.body.credential,
      name: "manager",
      workspace: await makeTempDir("gadget-manage-ws-"),
      capacity: 1,
      registeredAt: new Date().toISOString(),
    };
    drone = new Drone({
      config,
      ...(await droneSandbox(config)),
      version: "test",
      hostname: "test-host",
      platform: "linux-test",
      logger: quietLogger,
      heartbeatMs: 200,
      tunables: { retry: { maxRetries: 0 } },
    });
    await drone.start();
    await waitForDroneOnline(user, "manager");
  });

  afterAll(async () => {
    drone?.close();
    await http?.close();
    await model?.close();
    await server?.close();
  });

  it("checks a new project's URL from the drone: found, missing, refused, unreachable", async () => {
    const found = await user.post("/api/projects", { name: "Found", gitUrl: bare });
    expect(found.status).toBe(201);
    expect(found.body.gitUrlCheck).toMatchObject({
      checked: true,
      drone: "manager",
      defaultBranch: "main",
    });

    const missing = await user.post("/api/projects", {
      name: "Missing",
      gitUrl: path.join(path.dirname(bare), "nothing-here.git"),
    });
    expect(missing.status).toBe(400);
    expect(missing.body.error.details[0]).toMatchObject({ path: "gitUrl", problem: "not_found" });

    const overHttp = `${http.url}/${path.basename(bare)}`;
    const withAccount = overHttp.replace("http://", `http://ada:${password}@`);
    expect((await user.post("/api/projects", { name: "Http", gitUrl: withAccount })).status).toBe(
      201,
    );
    const wrong = overHttp.replace("http://", "http://ada:not-the-password@");
    const refused = await user.post("/api/projects", { name: "Refused", gitUrl: wrong });
    expect(refused.status).toBe(400);
    expect(refused.body.error.details[0].problem).toBe("authentication_failed");
    expect(JSON.stringify(refused.body)).not.toContain("not-the-password");

    const unreachable = await user.post("/api/projects", {
      name: "Nowhere",
      gitUrl: "http://127.0.0.1:1/nothing.git",
    });
    expect(unreachable.status).toBe(400);
    expect(unreachable.body.error.details[0].problem).toBe("unreachable");

    const names = (await user.get("/api/projects")).body.projects.map(
      (project: { name: string }) => project.name,
    );
    expect(names).toEqual(["Found", "Http"]);
  });

  it("clones a project now, so its files show before any turn", async () => {
    const project = await user.post("/api/projects", { name: "Clone me", gitUrl: bare });
    const projectId = project.body.project._id;
    // Nothing holds it yet: no drone has its checkout.
    expect((await user.get(`/api/projects/${projectId}/files`)).status).toBe(503);

    const cloned = await user.post(`/api/projects/${projectId}/clone`);
    expect(cloned.status).toBe(200);
    expect(cloned.body).toMatchObject({ outcome: "cloned", branch: "main" });
    expect(cloned.body.drone.name).toBe("manager");
    const files = await user.get(`/api/projects/${projectId}/files`);
    expect(files.status).toBe(200);
    expect(files.body.entries.map((entry: { name: string }) => entry.name)).toEqual(
      expect.arrayContaining(["README.md", "src.txt"]),
    );
    const again = await user.post(`/api/projects/${projectId}/clone`);
    expect(again.body.outcome).toBe("up-to-date");
  });

  it("runs an always-allowed command without an approval while a different one still asks", async () => {
    const project = await user.post("/api/projects", { name: "Allowed", gitUrl: bare });
    const session = await user.post(`/api/projects/${project.body.project._id}/sessions`, {
      name: "on write",
      approval: "on-write",
    });
    const sessionId = session.body.session._id;
    const run = (command: string) => ({
      toolCalls: [{ name: "run_command", arguments: { command } }],
    });

    /** Approves every approval of the turn as it comes; returns the commands it was asked for. */
    async function runApproving(prompt: string, alwaysAllow: (command: string) => boolean) {
      const created = await user.post(`/api/sessions/${sessionId}/turns`, { prompt, providerId });
      const turnId = created.body.turn._id;
      const asked: string[] = [];
      await waitFor(
        async () => {
          const turn = (await user.get(`/api/turns/${turnId}`)).body.turn;
          if (turn.status === "completed" || turn.status === "failed") return true;
          if (turn.status !== "awaiting_approval") return false;
          const approvals = (await turnEvents(user, turnId))
            .filter((event) => event.type === "approval")
            .flatMap((event) => event.data.approvals);
          for (const approval of approvals) {
            if (asked.includes(approval.id)) continue;
            const command = approval.params.command;
            const decided = await user.post(`/api/turns/${turnId}/approvals/${approval.id}`, {
              approve: true,
              ...(alwaysAllow(command) ? { alwaysAllow: true } : {}),
            });
            if (decided.status === 200) asked.push(approval.id);
          }
          return false;
        },
        30_000,
        "turn to finish",
      );
      const turn = await waitForTurn(user, turnId, ["completed"]);
      const commands = (await turnEvents(user, turnId))
        .filter((event) => event.type === "approval")
        .flatMap((event) =>
          event.data.approvals.map(
            (approval: { params: { command: string } }) => approval.params.command,
          ),
        );
      return { turn, commands };
    }

    model.enqueue(run("node --version"), { text: "Ran it once." });
    const first = await runApproving("Run node --version", () => true);
    expect(first.commands).toEqual(["node --version"]);
    const stored = await user.get(`/api/sessions/${sessionId}`);
    expect(stored.body.session.allowedCommands).toEqual(["node --version"]);

    model.enqueue(run("node --version"), run("node -e 0"), { text: "Ran both." });
    const second = await runApproving("Run both", () => false);
    // The allowed command ran without a card; the other one still asked.
    expect(second.commands).toEqual(["node -e 0"]);
    const results = (await turnEvents(user, second.turn._id)).filter(
      (event) => event.type === "tool_result",
    );
    expect(results.map((event) => event.data.tool)).toEqual(["run_command", "run_command"]);

    // Removed from the session, it asks again.
    await user.patch(`/api/sessions/${sessionId}`, { allowedCommands: [] });
    model.enqueue(run("node --version"), { text: "Asked again." });
    const third = await runApproving("Run it again", () => false);
    expect(third.commands).toEqual(["node --version"]);
  });
});
