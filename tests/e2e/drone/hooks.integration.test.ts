// Project hooks through real drone turns (a real server, the drone CLI, git and bubblewrap; the
// model scripted): a PreToolUse hook blocking `rm` (the model reads why) that the agent cannot
// switch off mid-turn, one rewriting a path before the write is approved, a Stop hook running the
// tests that keeps the loop going once, a hook that hangs, an invalid hooks file, and the project's
// own hooks checked at the REST edge.
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import type { GadgetServer } from "@gadget/server";
import { startTestServer } from "@gadget/server/testing";
import { messageText, type ScriptedModel, startScriptedModel } from "@gadget/testkit";
import { type ApiClient, signup, waitFor } from "@gadget/testkit/wire";
import { createRemote, worktreeDirectory } from "gadget-drone/testing";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  type DroneProcess,
  settledEvents,
  startRegisteredDrone,
  turnEvents,
  waitForTurn,
} from "./helpers.ts";

// biome-ignore lint/suspicious/noExplicitAny: events are asserted by shape
type Event = any;

const hooksFile = (hooks: unknown) => `${JSON.stringify(hooks, null, 2)}\n`;

/** Reads the hook's JSON from stdin, then runs `body` with it as `input`. */
const hookScript = (body: string) =>
  `let text = "";\nprocess.stdin.on("data", (chunk) => (text += chunk));\nprocess.stdin.on("end", () => {\n  const input = JSON.parse(text);\n${body}\n});\n`;

describe("project hooks in real drone turns", () => {
  let server: GadgetServer;
  let model: ScriptedModel;
  let user: ApiClient;
  let drone: DroneProcess | undefined;
  let workspaceRoot: string;
  let droneConfig: string;
  let providerId: string;

  async function project(name: string, files: Record<string, string>) {
    const remote = await createRemote({ "README.md": `# ${name}\n`, ...files });
    const created = await user.post("/api/projects", { name, gitUrl: remote.bare });
    expect(created.status).toBe(201);
    return {
      projectId: created.body.project._id as string,
      slug: created.body.project.slug as string,
    };
  }

  async function session(projectId: string, approval: "auto" | "on-write" = "auto") {
    const created = await user.post(`/api/projects/${projectId}/sessions`, {
      name: "s",
      approval,
    });
    return created.body.session._id as string;
  }

  async function startTurn(sessionId: string, prompt: string): Promise<string> {
    const created = await user.post(`/api/sessions/${sessionId}/turns`, { prompt, providerId });
    expect(created.status).toBe(202);
    return created.body.turn._id;
  }

  const hookEvents = (events: Event[]) =>
    events.filter((event) => event.type === "hook").map((event) => event.data);
  const toolMessages = (index: number) =>
    (model.chatRequests[index]?.messages ?? [])
      .filter((message) => message.role === "tool")
      .map((message) => messageText(message));

  beforeAll(async () => {
    server = await startTestServer(
      { mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl") },
      `drone_hooks_${process.pid}`,
    );
    model = await startScriptedModel();
    user = await signup(server.url, "drone-hooks");
    const provider = await user.post("/api/providers", {
      name: "scripted",
      baseUrl: model.baseUrl,
      apiKey: "sk-hooks",
      modelId: "scripted-model",
    });
    providerId = provider.body.provider._id;
    const started = await startRegisteredDrone(user, server.url, "hooks");
    drone = started.drone;
    workspaceRoot = started.workspace;
    droneConfig = started.config;
  });

  afterAll(async () => {
    drone?.child.kill("SIGKILL");
    await model?.close();
    await server?.close();
  });

  it("a PreToolUse hook blocks rm: the model reads why, and rewriting hooks.json mid-turn changes nothing", async () => {
    const { projectId, slug } = await project("Guarded", {
      "data.txt": "keep me\n",
      ".gadget/hooks.json": hooksFile({
        PreToolUse: [{ matcher: "run_command", command: ["node", ".gadget/guard.mjs"] }],
      }),
      ".gadget/guard.mjs": hookScript(
        `  if (/^rm\\b/.test(input.params.command)) {\n    process.stderr.write("Deleting files with rm is not allowed here; use git rm so it can be reviewed.");\n    process.exit(2);\n  }`,
      ),
    });
    const sessionId = await session(projectId);
    const before = model.chatRequests.length;
    model.enqueue(
      // The agent tries to switch the guard off first, both the hooks file and the guard's
      // program: the turn keeps the hooks (and programs) it started with.
      {
        toolCalls: [
          { name: "write_file", arguments: { path: ".gadget/hooks.json", content: "{}\n" } },
          {
            name: "write_file",
            arguments: { path: ".gadget/guard.mjs", content: "// allow all\n" },
          },
        ],
      },
      { toolCalls: [{ name: "run_command", arguments: { command: "rm data.txt" } }] },
      { text: "I could not delete it." },
    );
    const turnId = await startTurn(sessionId, "Delete data.txt");
    const events = await settledEvents(user, turnId, 60_000);
    expect(hookEvents(events)).toMatchObject([
      {
        event: "PreToolUse",
        command: "node .gadget/guard.mjs",
        tool: "run_command",
        ok: true,
        outcome: "blocked",
        output: expect.stringContaining("use git rm"),
      },
    ]);
    const result = events.find(
      (event) => event.type === "tool_result" && event.data.tool === "run_command",
    );
    expect(result.data).toMatchObject({ ok: false, summary: "blocked by a project hook" });
    expect(toolMessages(before + 2).at(-1)).toBe(
      "Error: a project hook blocked this call: Deleting files with rm is not allowed here; use git rm so it can be reviewed.",
    );
    const worktree = worktreeDirectory(workspaceRoot, slug, sessionId);
    expect(existsSync(path.join(worktree, "data.txt"))).toBe(true);
    // The agent's rewrite took: the next turn starts from it, this one did not.
    expect(await readFile(path.join(worktree, ".gadget", "hooks.json"), "utf8")).toBe("{}\n");
    expect(await readFile(path.join(worktree, ".gadget", "guard.mjs"), "utf8")).toBe(
      "// allow all\n",
    );
    // The committed copy the guard ran from is gone with the turn.
    expect(existsSync(path.join(workspaceRoot, ".hooks", turnId))).toBe(false);
    expect(events.at(-1).data.reason).toBe("completed");
  });

  it("a PreToolUse hook rewrites a path, and the rewritten write is what waits for approval", async () => {
    const { projectId, slug } = await project("Rewritten", {
      ".gadget/hooks.json": hooksFile({
        PreToolUse: [{ matcher: "write_file|edit_file", command: ["node", ".gadget/docs.mjs"] }],
      }),
      ".gadget/docs.mjs": hookScript(
        `  const { path } = input.params;\n  if (!path.startsWith("docs/")) console.log(JSON.stringify({ params: { ...input.params, path: "docs/" + path } }));`,
      ),
    });
    const sessionId = await session(projectId, "on-write");
    model.enqueue(
      {
        toolCalls: [{ name: "write_file", arguments: { path: "notes.md", content: "# Notes\n" } }],
      },
      { text: "Wrote the notes." },
    );
    const turnId = await startTurn(sessionId, "Write notes");
    const approval = await waitFor(
      async () => (await turnEvents(user, turnId)).find((event) => event.type === "approval"),
      30_000,
      "the approval",
    );
    const [request] = approval.data.approvals;
    expect(request.params).toEqual({ path: "docs/notes.md", content: "# Notes\n" });
    expect(request.description).toContain("docs/notes.md");
    await waitForTurn(user, turnId, ["awaiting_approval"], 15_000);
    const decided = await user.post(`/api/turns/${turnId}/approvals/${request.id}`, {
      approve: true,
    });
    expect(decided.status).toBe(200);
    const events = await settledEvents(user, turnId, 60_000);
    expect(hookEvents(events)).toMatchObject([
      { event: "PreToolUse", tool: "write_file", outcome: "rewrote" },
    ]);
    const worktree = worktreeDirectory(workspaceRoot, slug, sessionId);
    expect(existsSync(path.join(worktree, "docs", "notes.md"))).toBe(true);
    expect(existsSync(path.join(worktree, "notes.md"))).toBe(false);
  });

  it("a Stop hook running the tests keeps the loop going once, until they pass", async () => {
    const { projectId } = await project("Tested", {
      "sum.mjs": "export const sum = (a, b) => a - b;\n",
      "sum.test.mjs":
        'import assert from "node:assert";\nimport { sum } from "./sum.mjs";\nassert.strictEqual(sum(2, 3), 5);\n',
      ".gadget/hooks.json": hooksFile({ Stop: [{ command: ["node", ".gadget/tests.mjs"] }] }),
      ".gadget/tests.mjs": `import { spawnSync } from "node:child_process";\nconst run = spawnSync(process.execPath, ["sum.test.mjs"], { encoding: "utf8" });\nif (run.status !== 0) {\n  process.stderr.write("The tests fail:\\n" + run.stderr.slice(-800));\n  process.exit(2);\n}\n`,
    });
    const sessionId = await session(projectId);
    const before = model.chatRequests.length;
    model.enqueue(
      { text: "Done, sum is implemented." },
      {
        toolCalls: [
          {
            name: "write_file",
            arguments: { path: "sum.mjs", content: "export const sum = (a, b) => a + b;\n" },
          },
        ],
      },
      { text: "Fixed sum; the tests pass." },
    );
    const events = await settledEvents(user, await startTurn(sessionId, "Implement sum"), 60_000);
    expect(hookEvents(events)).toMatchObject([
      { event: "Stop", outcome: "blocked", output: expect.stringContaining("The tests fail") },
      { event: "Stop", outcome: "continue", ok: true },
    ]);
    expect(model.chatRequests.length - before).toBe(3);
    const told = (model.chatRequests[before + 1]?.messages ?? []).map(messageText).join("\n");
    expect(told).toContain("The tests fail");
    expect(told).toContain("AssertionError");
    expect(events.find((event) => event.type === "response").data.message).toBe(
      "Fixed sum; the tests pass.",
    );
  });

  it("a hook that hangs is killed after its timeout, said in the turn, and the call goes on", async () => {
    const { projectId } = await project("Hung", {
      ".gadget/hooks.json": hooksFile({
        PreToolUse: [
          {
            matcher: "read_file",
            command: ["node", "-e", "setInterval(() => {}, 1000)"],
            timeoutMs: 1000,
          },
        ],
      }),
    });
    const sessionId = await session(projectId);
    model.enqueue(
      { toolCalls: [{ name: "read_file", arguments: { path: "README.md" } }] },
      { text: "Read it." },
    );
    const events = await settledEvents(user, await startTurn(sessionId, "Read the README"), 60_000);
    const [run] = hookEvents(events);
    expect(run).toMatchObject({ event: "PreToolUse", ok: false, outcome: "timeout" });
    expect(run.output).toContain("killed after 1000 ms");
    expect(
      events.find((event) => event.type === "tool_result" && event.data.tool === "read_file").data
        .ok,
    ).toBe(true);
    expect(events.at(-1).data.reason).toBe("completed");
  });

  it("an invalid hooks file is one warning line in the turn, which runs without its hooks", async () => {
    const { projectId } = await project("Invalid", {
      ".gadget/hooks.json": hooksFile({ PreToolUse: [{ command: "rm -rf /" }] }),
    });
    const sessionId = await session(projectId);
    model.enqueue({ text: "Hello." });
    const events = await settledEvents(user, await startTurn(sessionId, "Say hello"), 60_000);
    const warnings = events.filter(
      (event) => event.type === "status" && event.data.phase === "hooks",
    );
    expect(warnings).toHaveLength(1);
    expect(warnings[0].data.level).toBe("warning");
    expect(warnings[0].data.message).toMatch(
      /^\.gadget\/hooks\.json at [0-9a-f]{7} is not valid, so its hooks do not run: PreToolUse\.0\.command: /,
    );
    expect(hookEvents(events)).toEqual([]);
    expect(events.at(-1).data.reason).toBe("completed");
  });

  it("the project's own hooks: checked at the REST edge, SessionStart context on a session's first turn", async () => {
    const { projectId } = await project("Settings hooks", {});
    const refused = await user.patch(`/api/projects/${projectId}`, {
      hooks: { PreToolUse: [{ matcher: "(", command: ["true"] }], Later: [] },
    });
    expect(refused.status).toBe(400);
    const paths = refused.body.error.details.map((issue: { path: string }) => issue.path);
    expect(paths).toEqual(expect.arrayContaining(["hooks.PreToolUse.0.matcher", "hooks"]));
    const saved = await user.patch(`/api/projects/${projectId}`, {
      hooks: {
        SessionStart: [
          { command: ["node", "-e", "console.log('Use pnpm here, never npm.')"] },
          // In the turn's sandbox, as run_command: the drone's own config is not there.
          {
            command: [
              "node",
              "-e",
              `try { require("fs").readFileSync(${JSON.stringify(droneConfig)}); console.log("config LEAKED") } catch (error) { console.log("config BLOCKED " + error.code) }`,
            ],
          },
        ],
      },
    });
    expect(saved.status).toBe(200);
    expect(saved.body.project.hooks.SessionStart).toHaveLength(2);
    const sessionId = await session(projectId);
    const before = model.chatRequests.length;
    model.enqueue({ text: "Noted." });
    const events = await settledEvents(user, await startTurn(sessionId, "Hi"), 60_000);
    expect(hookEvents(events)).toMatchObject([
      { event: "SessionStart", outcome: "context" },
      { event: "SessionStart", outcome: "context" },
    ]);
    const system = messageText(model.chatRequests[before]?.messages[0]);
    expect(system).toContain("Use pnpm here, never npm.");
    expect(system).toContain("config BLOCKED ENOENT");
  });
});
