// End to end with an in-process drone (short heartbeats): cancel, approvals, the file relay, and a
// server restart in the middle of a turn.
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import type { GadgetServer } from "@gadget/server";
import { createGadgetServer } from "@gadget/server";
import { startTestServer, testConfig } from "@gadget/server/testing";
import {
  makeTempDir,
  processesWithArgument,
  type ScriptedModel,
  startScriptedModel,
  waitingCommand,
} from "@gadget/testkit";
import { type ApiClient, signup, waitFor } from "@gadget/testkit/wire";
import { Drone } from "gadget-drone";
import { createRemote, droneSandbox, worktreeDirectory } from "gadget-drone/testing";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  quietLogger,
  settledEvents,
  turnEvents,
  waitForDroneOnline,
  waitForTurn,
} from "./helpers.ts";

describe("drone control end to end", () => {
  let server: GadgetServer;
  let model: ScriptedModel;
  let user: ApiClient;
  let drone: Drone;
  let workspaceRoot: string;
  let credential: string;
  let providerId: string;
  let projectId: string;
  let projectSlug: string;
  // The approval test's session: its worktree holds a turn's commit, for the hand-edit test.
  let editedSession = "";
  const name = `drone_control_${process.pid}`;
  // The restart test needs the grace period to outlast a server's stop and start on a loaded
  // machine (1.5 s did not, once; 15 s did not at load 30); the drone heartbeats every 200 ms, so
  // nothing else waits on it.
  const serverOptions = () => ({
    mongoUrl: inject("mongoUrl"),
    redisUrl: inject("redisUrl"),
    droneGraceMs: 60_000,
  });

  async function session(approval: "auto" | "on-write" = "auto") {
    const created = await user.post(`/api/projects/${projectId}/sessions`, { name: "s", approval });
    return created.body.session._id as string;
  }

  async function startDrone(serverUrl: string) {
    const token = await user.post("/api/drones/registration-tokens");
    const registered = await user.post("/api/drones/register", {
      token: token.body.token,
      name: "in-process",
      capacity: 2,
    });
    credential = registered.body.credential;
    const config = {
      server: serverUrl,
      droneId: registered.body.drone._id,
      credential: registered.body.credential,
      name: "in-process",
      workspace: workspaceRoot,
      capacity: 2,
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
      reconnectDelayMs: 100,
      reconnectDelayMaxMs: 300,
      tunables: { retry: { maxRetries: 0 } },
    });
    await drone.start();
    await waitForDroneOnline(user, "in-process");
  }

  beforeAll(async () => {
    server = await startTestServer(serverOptions(), name);
    model = await startScriptedModel();
    user = await signup(server.url, "control");
    const remote = await createRemote({ "README.md": "# Demo\n", "src.txt": "hello\n" });
    providerId = (
      await user.post("/api/providers", {
        name: "m",
        baseUrl: model.baseUrl,
        apiKey: "sk-x-provider-key",
        modelId: "scripted-model",
      })
    ).body.provider._id;
    const project = await user.post("/api/projects", { name: "Demo", gitUrl: remote.bare });
    projectId = project.body.project._id;
    projectSlug = project.body.project.slug;
    workspaceRoot = await makeTempDir("gadget-control-ws-");
    await startDrone(server.url);
  });

  afterAll(async () => {
    drone?.close();
    await model?.close();
    await server?.close();
  });

  it("cancels a turn during a long command: the command's process is gone and the turn ends cancelled", async () => {
    const word = `gadget-wait-cancel-${process.pid}`;
    model.enqueue({
      toolCalls: [
        {
          name: "run_command",
          arguments: {
            command: waitingCommand("long-command.started", 60_000, word),
            timeout_ms: 120000,
          },
        },
      ],
    });
    const sessionId = await session();
    const created = await user.post(`/api/sessions/${sessionId}/turns`, {
      prompt: "Run the long job",
      providerId,
    });
    const turnId = created.body.turn._id;
    // The command runs in its own pid namespace: found from here by the word on its command line.
    // The model's call, the sandbox's start and the command's: seconds on a busy machine.
    const pid = await waitFor(
      async () => processesWithArgument(word)[0] ?? null,
      60_000,
      "the long command to start in the sandbox",
    );
    const cancelledAt = Date.now();
    expect((await user.post(`/api/turns/${turnId}/cancel`)).status).toBe(202);
    const turn = await waitForTurn(user, turnId, ["cancelled", "completed", "failed"]);
    expect(turn.status).toBe("cancelled");
    expect(Date.now() - cancelledAt).toBeLessThan(5_000);
    const events = await settledEvents(user, turnId);
    // The command's whole process group is ended (SIGTERM, SIGKILL after 2 s).
    await waitFor(
      () => {
        try {
          process.kill(pid as number, 0);
          return false;
        } catch {
          return true;
        }
      },
      3_000,
      "the long command to be gone",
    );
    expect(events.at(-1)).toMatchObject({ type: "done", data: { reason: "cancelled" } });
  });

  it("pauses a write for approval: an approved write happens, a denied one does not", async () => {
    model.enqueue(
      {
        toolCalls: [{ name: "write_file", arguments: { path: "approved.txt", content: "yes\n" } }],
      },
      { toolCalls: [{ name: "write_file", arguments: { path: "denied.txt", content: "no\n" } }] },
      (request) => {
        const toolResult = request.body.messages
          .filter((message) => message.role === "tool")
          .at(-1);
        return { text: `Done. Last result: ${String(toolResult?.content)}` };
      },
    );
    const sessionId = await session("on-write");
    const created = await user.post(`/api/sessions/${sessionId}/turns`, {
      prompt: "Write two files",
      providerId,
    });
    const turnId = created.body.turn._id;

    for (const approve of [true, false]) {
      const approval = await waitFor(
        async () => {
          const events = await turnEvents(user, turnId);
          const pending = events.filter((event) => event.type === "approval");
          return pending.length === (approve ? 1 : 2) ? pending.at(-1) : null;
        },
        15_000,
        "approval event",
      );
      const turn = await waitForTurn(user, turnId, ["awaiting_approval"], 10_000);
      expect(turn.status).toBe("awaiting_approval");
      const [request] = approval.data.approvals;
      const decided = await user.post(`/api/turns/${turnId}/approvals/${request.id}`, { approve });
      expect(decided.status).toBe(200);
    }

    const turn = await waitForTurn(user, turnId, ["completed", "failed"]);
    expect(turn.status).toBe("completed");
    expect(turn.response).toContain("declined by the user");
    const checkout = worktreeDirectory(workspaceRoot, projectSlug, sessionId);
    expect(await readFile(path.join(checkout, "approved.txt"), "utf8")).toBe("yes\n");
    expect(existsSync(path.join(checkout, "denied.txt"))).toBe(false);
    editedSession = sessionId;
  });

  it("relays hand edits into a session's worktree: content hashes, stale writes, every escape refused", async () => {
    const sessionId = editedSession;
    const worktree = worktreeDirectory(workspaceRoot, projectSlug, sessionId);
    const checkout = path.join(workspaceRoot, projectSlug);
    // The default-branch checkout reads, but never takes an edit.
    const original = await user.get(`/api/projects/${projectId}/file?path=src.txt`);
    expect(original.body).toMatchObject({ path: "src.txt", content: "hello\n" });
    const refused = await user.put(`/api/projects/${projectId}/file`, {
      path: "src.txt",
      content: "into the default branch\n",
      baseSha: original.body.sha,
    });
    expect(refused.status).toBe(409);
    expect(refused.body.error.details).toEqual({ reason: "read_only" });
    expect(await readFile(path.join(checkout, "src.txt"), "utf8")).toBe("hello\n");

    const read = await user.get(
      `/api/projects/${projectId}/file?path=src.txt&session=${sessionId}`,
    );
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ path: "src.txt", content: "hello\n" });
    const written = await user.put(`/api/projects/${projectId}/file`, {
      sessionId,
      path: "src.txt",
      content: "hello from the editor\n",
      baseSha: read.body.sha,
    });
    expect(written.status).toBe(200);
    expect(await readFile(path.join(worktree, "src.txt"), "utf8")).toBe("hello from the editor\n");
    expect(await readFile(path.join(checkout, "src.txt"), "utf8")).toBe("hello\n");

    const stale = await user.put(`/api/projects/${projectId}/file`, {
      sessionId,
      path: "src.txt",
      content: "x",
      baseSha: read.body.sha,
    });
    expect(stale.status).toBe(409);
    expect(stale.body.error.code).toBe("conflict");

    // The session's listing has its own work; the default branch's has not.
    const listing = await user.get(`/api/projects/${projectId}/files?path=&session=${sessionId}`);
    expect(listing.status).toBe(200);
    expect(JSON.stringify(listing.body)).toContain("approved.txt");
    const defaultListing = await user.get(`/api/projects/${projectId}/files?path=`);
    expect(JSON.stringify(defaultListing.body)).not.toContain("approved.txt");

    // Its branch is one turn ahead of the default branch, with the hand edit uncommitted.
    const detail = await user.get(`/api/sessions/${sessionId}`);
    expect(detail.status).toBe(200);
    expect(detail.body.session.branch).toMatch(/^gadget\//);
    expect(detail.body.session.worktree).toMatchObject({ ahead: 1, behind: 0, dirty: true });

    const outside = path.join(path.dirname(workspaceRoot), `outside-${process.pid}.txt`);
    for (const attempt of ["../outside.txt", "/etc/passwd", `../../${path.basename(outside)}`]) {
      const response = await user.get(
        `/api/projects/${projectId}/file?session=${sessionId}&path=${encodeURIComponent(attempt)}`,
      );
      expect(response.status, attempt).toBe(403);
    }
    for (const attempt of [".git/hooks/pre-commit", "../escape.txt", ".git"]) {
      const response = await user.put(`/api/projects/${projectId}/file`, {
        sessionId,
        path: attempt,
        content: "#!/bin/sh\n",
      });
      expect(response.status, attempt).toBe(403);
    }
    expect(existsSync(path.join(checkout, ".git", "hooks", "pre-commit"))).toBe(false);
    expect(existsSync(path.join(workspaceRoot, "escape.txt"))).toBe(false);
    // Another project's session, or none at all, is not found.
    const unknown = await user.get(
      `/api/projects/${projectId}/files?path=&session=665f1c2e9b1d4a00123456aa`,
    );
    expect(unknown.status).toBe(404);
  });

  it("keeps the provider key and the drone credential out of commands and events", async () => {
    model.enqueue(
      {
        toolCalls: [
          {
            name: "run_command",
            arguments: { command: 'node -e "console.log(JSON.stringify(process.env))"' },
          },
        ],
      },
      { text: "Printed the environment." },
    );
    const sessionId = await session();
    const created = await user.post(`/api/sessions/${sessionId}/turns`, {
      prompt: "Show the env",
      providerId,
    });
    const events = await settledEvents(user, created.body.turn._id);
    const output = events
      .filter((event) => event.type === "tool_output")
      .map((event) => event.data.text)
      .join("");
    expect(output).toContain('"PAGER":"cat"');
    expect(output).not.toContain("sk-x-provider-key");
    expect(output).not.toContain(credential);
    expect(JSON.stringify(events)).not.toContain("sk-x-provider-key");
    // The key did reach the drone: it authenticated the model requests, and only those.
    expect(model.requests.at(-1)?.headers.authorization).toBe("Bearer sk-x-provider-key");
    // What the model was shown as the command's result is just as clean.
    expect(JSON.stringify(model.chatRequests.at(-1)?.messages)).not.toContain(credential);
  });

  it("verifies with the project's commands and gives the loop a repair pass when they fail", async () => {
    const remote = await createRemote({
      "package.json": '{ "type": "module" }\n',
      "lib.js": "export const add = (a, b) => a - b;\n",
      "test.js":
        'import { add } from "./lib.js";\nif (add(2, 3) !== 5) { console.error("add is wrong"); process.exit(1); }\n',
    });
    const project = await user.post("/api/projects", {
      name: "Verified",
      gitUrl: remote.bare,
      verifyCommands: ["node test.js"],
    });
    const created = await user.post(`/api/projects/${project.body.project._id}/sessions`, {
      name: "v",
    });
    model.enqueue(
      // The first loop answers without fixing anything; verification fails.
      { text: "I looked; it seems fine." },
      // The repair loop is told what failed, fixes it, and answers.
      (request) =>
        request.lastText.includes("add is wrong") ||
        JSON.stringify(request.body.messages).includes("add is wrong")
          ? {
              toolCalls: [
                {
                  name: "edit_file",
                  arguments: { path: "lib.js", old_string: "a - b", new_string: "a + b" },
                },
              ],
            }
          : { text: "The repair prompt did not mention the failure." },
      { text: "Fixed: add now adds." },
    );
    const turn = await user.post(`/api/sessions/${created.body.session._id}/turns`, {
      prompt: "Check the project",
      providerId,
    });
    const events = await settledEvents(user, turn.body.turn._id);
    const verifications = events.filter((event) => event.type === "verification");
    expect(verifications).toHaveLength(1);
    expect(verifications[0].data).toMatchObject({
      ok: true,
      repairPasses: 1,
      commands: [{ command: "node test.js", exitCode: 0 }],
    });
    expect(
      events.some(
        (event) =>
          event.type === "status" && /Verification failed; repair pass 1/.test(event.data.message),
      ),
    ).toBe(true);
    const final = await waitForTurn(user, turn.body.turn._id, ["completed", "failed"]);
    expect(final.response).toBe("Fixed: add now adds.");
    expect(final.changes).toEqual([{ path: "lib.js", status: "modified" }]);
  });

  it("goes on through a server restart mid-turn: the drone reconnects and every event arrives once", async () => {
    model.enqueue(
      { toolCalls: [{ name: "read_file", arguments: { path: "README.md" } }] },
      // A slow answer, so the restart happens while the model streams.
      {
        text: "The README has a title and nothing else. ".repeat(20),
        chunkSize: 20,
        chunkDelayMs: 60,
      },
    );
    const sessionId = await session();
    const created = await user.post(`/api/sessions/${sessionId}/turns`, {
      prompt: "Summarise the README",
      providerId,
    });
    const turnId = created.body.turn._id;
    await waitFor(
      async () => (await turnEvents(user, turnId)).some((event) => event.type === "token"),
      15_000,
      "tokens",
    );

    const port = server.port;
    await server.close();
    server = await createGadgetServer(testConfig({ ...serverOptions(), port }, name));

    const turn = await waitForTurn(user, turnId, ["completed", "failed", "interrupted"], 30_000);
    const events = await settledEvents(user, turnId);
    expect(
      turn.status,
      JSON.stringify([turn.error, events.filter((event) => event.type !== "token")]),
    ).toBe("completed");
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    const text = events
      .filter((event) => event.type === "token")
      .map((event) => event.data.text)
      .join("");
    expect(text).toBe("The README has a title and nothing else. ".repeat(20));
    await writeFile(path.join(workspaceRoot, "restart-ok"), "");
  });
});
