// End to end: the real server, Redis and FerretDB, the scripted OpenAI server, a local bare git
// repository as the project, and gadget-drone run through its CLI.
import { readFile, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import type { GadgetServer } from "@gadget/server";
import { startTestServer } from "@gadget/server/testing";
import { type ScriptedModel, startScriptedModel } from "@gadget/testkit";
import { type ApiClient, signup } from "@gadget/testkit/wire";
import { createRemote, worktreeDirectory } from "gadget-drone/testing";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  type DroneProcess,
  freshHome,
  runCli,
  startCli,
  turnEvents,
  waitForDroneOnline,
  waitForTurn,
} from "./helpers.ts";

const buggyLibrary = "export function add(a, b) {\n  return a - b;\n}\n";
const testScript =
  'import { add } from "./lib.js";\nif (add(2, 3) !== 5) { console.error("add(2, 3) should be 5"); process.exit(1); }\nconsole.log("all tests passed");\n';

describe("gadget-drone end to end", () => {
  let server: GadgetServer;
  let model: ScriptedModel;
  let user: ApiClient;
  let home: string;
  let drone: DroneProcess;
  let projectSlug: string;
  let sessionId: string;
  let providerId: string;
  const workspaceRoot = () => path.join(home, "workspaces");

  beforeAll(async () => {
    // The CLI drone heartbeats every 10 s, so the server's lease must outlast that.
    server = await startTestServer(
      { mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl"), droneGraceMs: 30_000 },
      `drone_e2e_${process.pid}`,
    );
    model = await startScriptedModel({ apiKey: "sk-scripted-secret" });
    user = await signup(server.url, "drone-e2e");
    const remote = await createRemote({
      "package.json": '{ "type": "module" }\n',
      "lib.js": buggyLibrary,
      "test.js": testScript,
    });
    const provider = await user.post("/api/providers", {
      name: "scripted",
      baseUrl: model.baseUrl,
      apiKey: "sk-scripted-secret",
      modelId: "scripted-model",
      pricing: { inputPerMTok: 1, outputPerMTok: 2 },
    });
    providerId = provider.body.provider._id;
    const project = await user.post("/api/projects", { name: "Calculator", gitUrl: remote.bare });
    projectSlug = project.body.project.slug;
    const session = await user.post(`/api/projects/${project.body.project._id}/sessions`, {
      name: "Fix add",
    });
    sessionId = session.body.session._id;
    home = await freshHome();
  });

  afterAll(async () => {
    drone?.child.kill("SIGKILL");
    await model?.close();
    await server?.close();
  });

  it("registers through the CLI with a registration token, and refuses the token a second time", async () => {
    const token = await user.post("/api/drones/registration-tokens");
    expect(token.status).toBe(201);
    expect(token.body.command).toContain("gadget-drone register");
    const config = path.join(home, "drone.json");
    const registered = await runCli(
      [
        "register",
        "--server",
        server.url,
        "--token",
        token.body.token,
        "--name",
        "laptop",
        "--workspace",
        workspaceRoot(),
        "--config",
        config,
      ],
      home,
    );
    expect(registered.stderr).toBe("");
    expect(registered.code).toBe(0);
    expect(registered.stdout).toContain('Registered drone "laptop"');
    expect((await stat(config)).mode & 0o777).toBe(0o600);

    const again = await runCli(
      [
        "register",
        "--server",
        server.url,
        "--token",
        token.body.token,
        "--config",
        path.join(home, "other.json"),
      ],
      home,
    );
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^gadget-drone: The registration token was refused/);
    expect(again.stderr.trim().split("\n")).toHaveLength(1);
  });

  it("says in one line what is wrong: a bad URL, an unreachable server, another server's config", async () => {
    const config = path.join(home, "drone.json");
    const cases: Array<[string[], RegExp]> = [
      [["--server", "not a url", "--token", "t"], /is not a URL/],
      [
        ["--server", "http://127.0.0.1:9", "--token", "t", "--config", path.join(home, "x.json")],
        /Cannot reach the server at http:\/\/127\.0\.0\.1:9/,
      ],
      [
        ["--server", "http://other.example:3000", "--token", "t", "--config", config],
        /already registers this machine with .*--force/,
      ],
    ];
    for (const [args, message] of cases) {
      const result = await runCli(["register", ...args], home);
      expect(result.code).toBe(1);
      expect(result.stderr.trim().split("\n")).toHaveLength(1);
      expect(result.stderr).toMatch(message);
    }
    // The refused overwrite left the existing registration alone.
    expect(JSON.parse(await readFile(config, "utf8")).server).toBe(server.url);
  });

  it("starts, comes online, and completes a turn that reads, edits, runs the tests and answers", async () => {
    drone = startCli(["--config", path.join(home, "drone.json")], home);
    await waitForDroneOnline(user, "laptop");

    model.enqueue(
      {
        toolCalls: [{ name: "read_file", arguments: { path: "lib.js" } }],
        usage: { promptTokens: 100, completionTokens: 10 },
      },
      {
        reasoning: "The function subtracts instead of adding.",
        toolCalls: [
          {
            name: "edit_file",
            arguments: { path: "lib.js", old_string: "return a - b;", new_string: "return a + b;" },
          },
        ],
        usage: { promptTokens: 200, completionTokens: 20, reasoningTokens: 5 },
      },
      {
        toolCalls: [{ name: "run_command", arguments: { command: "node test.js" } }],
        usage: { promptTokens: 300, completionTokens: 30 },
      },
      {
        text: "Fixed `add`: it subtracted. The tests pass now.",
        usage: { promptTokens: 400, completionTokens: 40 },
      },
    );
    const created = await user.post(`/api/sessions/${sessionId}/turns`, {
      prompt: "Make the tests pass",
      providerId,
    });
    expect(created.status).toBe(202);
    const turnId = created.body.turn._id;

    const turn = await waitForTurn(user, turnId, [
      "completed",
      "failed",
      "interrupted",
      "cancelled",
    ]);
    expect(turn.status).toBe("completed");
    expect(turn.response).toContain("The tests pass now");
    expect(turn.stats).toMatchObject({
      toolCallCount: 3,
      inputTokens: 1000,
      responseTokens: 100,
      passes: 4,
    });
    expect(turn.stats.cost).toBeCloseTo((1000 * 1 + 100 * 2) / 1_000_000, 10);
    expect(turn.changes).toEqual([{ path: "lib.js", status: "modified" }]);

    const events = await turnEvents(user, turnId);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    expect(events[0].type).toBe("queued");
    expect(events.at(-1)).toMatchObject({ type: "done", data: { reason: "completed", passes: 4 } });
    const results = events.filter((event) => event.type === "tool_result");
    expect(results.map((event) => [event.data.tool, event.data.ok])).toEqual([
      ["read_file", true],
      ["edit_file", true],
      ["run_command", true],
    ]);
    expect(
      events.some(
        (event) => event.type === "tool_output" && event.data.text.includes("all tests passed"),
      ),
    ).toBe(true);
    expect(events.some((event) => event.type === "thinking")).toBe(true);
    // The provider's key never appears in what the server stored.
    expect(JSON.stringify(events)).not.toContain("sk-scripted-secret");

    // The turn worked in its session's worktree; the default-branch checkout is as it was cloned.
    const worktree = worktreeDirectory(workspaceRoot(), projectSlug, sessionId);
    expect(await readFile(path.join(worktree, "lib.js"), "utf8")).toContain("return a + b;");
    expect(await readFile(path.join(workspaceRoot(), projectSlug, "lib.js"), "utf8")).toBe(
      buggyLibrary,
    );
  });

  it("reuses the clone and the session's worktree on the next turn; a hand edit between turns stays where it was made", async () => {
    // The web IDE's hand edits go to the default-branch checkout, never into a session's worktree.
    const notes = path.join(workspaceRoot(), projectSlug, "NOTES.md");
    await writeFile(notes, "my own notes\n");
    model.enqueue({ text: "Nothing to do.", usage: { promptTokens: 10, completionTokens: 5 } });
    const created = await user.post(`/api/sessions/${sessionId}/turns`, {
      prompt: "Anything left?",
      providerId,
    });
    const turn = await waitForTurn(user, created.body.turn._id, [
      "completed",
      "failed",
      "interrupted",
    ]);
    expect(turn.status).toBe("completed");
    const events = await turnEvents(user, created.body.turn._id);
    const workspaceMessages = events
      .filter((event) => event.type === "status" && event.data.phase === "workspace")
      .map((event) => event.data.message);
    expect(workspaceMessages.some((message: string) => message.startsWith("Cloned"))).toBe(false);
    expect(workspaceMessages).toContain("main is up to date");
    expect(
      workspaceMessages.some((message: string) =>
        message.startsWith("Continuing on branch gadget/fix-add-"),
      ),
    ).toBe(true);
    expect(await readFile(notes, "utf8")).toBe("my own notes\n");
    const worktree = worktreeDirectory(workspaceRoot(), projectSlug, sessionId);
    expect(await readFile(path.join(worktree, "lib.js"), "utf8")).toContain("return a + b;");
    // The model saw the earlier turn as history.
    const lastRequest = model.chatRequests.at(-1);
    expect(JSON.stringify(lastRequest?.messages)).toContain("Make the tests pass");
  });

  it("shows its status and stops cleanly on SIGTERM", async () => {
    const status = await runCli(["status", "--config", path.join(home, "drone.json")], home);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain("reachable:  yes");
    expect(status.stdout).toMatch(/running:\s+yes/);
    drone.child.kill("SIGTERM");
    expect(await drone.exited).toBe(0);
    const afterStop = await runCli(["status", "--config", path.join(home, "drone.json")], home);
    expect(afterStop.stdout).toMatch(/running:\s+no/);
    // A runtime file whose PID another process has now (PIDs wrap; a container restarts its
    // drone under the same one) does not make a stopped drone look running.
    await writeFile(
      path.join(home, "runtime.json"),
      JSON.stringify({
        pid: process.pid,
        identity: "another-boot:1",
        connected: true,
        activeTurns: [],
        updatedAt: new Date().toISOString(),
      }),
    );
    const stopped = await runCli(["status", "--config", path.join(home, "drone.json")], home);
    expect(stopped.stdout).toMatch(/running:\s+no/);
    // The log file under the config directory has JSON lines, and no secret.
    const log = await readFile(path.join(home, "drone.log"), "utf8");
    expect(
      log
        .trim()
        .split("\n")
        .every((line) => JSON.parse(line).name === "gadget-drone"),
    ).toBe(true);
    expect(log).toContain("work order accepted");
    expect(log).not.toContain("sk-scripted-secret");
    const credential = JSON.parse(await readFile(path.join(home, "drone.json"), "utf8")).credential;
    expect(log).not.toContain(credential);
  });
});
