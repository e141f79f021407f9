// A project's commands and skills through real drone turns on a real git repository: `/review
// <file>` becomes the command file's text before the model sees it (the turn shows what it became),
// an MCP server's prompt is a command too (the SDK fixture over Streamable HTTP, as the MCP tests
// use), an unknown command ends the turn before any model call, skills are listed in the system
// prompt and read with load_skill (in ask mode too), a linked SKILL.md or command file is never
// followed and a huge SKILL.md is capped, and the composer's list comes from the drone.
import { execFileSync } from "node:child_process";
import { mkdir, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import type { GadgetServer } from "@gadget/server";
import { startTestServer } from "@gadget/server/testing";
import { makeTempDir, type ScriptedModel, startScriptedModel } from "@gadget/testkit";
import { type RemoteMcpServer, startRemoteMcpServer } from "@gadget/testkit/mcp";
import { type ApiClient, signup } from "@gadget/testkit/wire";
import { createRemote } from "gadget-drone/testing";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  type DroneProcess,
  freshHome,
  registerWithCli,
  settledEvents,
  startCli,
  waitForDroneOnline,
  waitForTurn,
} from "./helpers.ts";

const bearer = "prompt-bearer-secret-51d2";
const runGit = (cwd: string, ...args: string[]) => execFileSync("git", args, { cwd });
const review = `---
description: Review a file the team's way
argument-hint: <file>
---
Review $ARGUMENTS carefully and list every bug you find.
`;
const release = `---
name: release
description: How we cut a release
---
1. Bump the version in package.json.
2. Tag it vRELEASE-STEP-MARKER.
`;

// biome-ignore lint/suspicious/noExplicitAny: test convenience
type Events = any[];

describe("commands and skills in real drone turns", () => {
  let server: GadgetServer;
  let model: ScriptedModel;
  let user: ApiClient;
  let remote: RemoteMcpServer;
  let drone: DroneProcess | undefined;
  let providerId: string;
  let projectId: string;

  async function session(mode?: string): Promise<string> {
    const created = await user.post(`/api/projects/${projectId}/sessions`, {
      name: "s",
      ...(mode ? { mode } : {}),
    });
    return created.body.session._id as string;
  }

  async function turn(
    sessionId: string,
    prompt: string,
  ): Promise<{ events: Events; turn: { status: string } }> {
    const created = await user.post(`/api/sessions/${sessionId}/turns`, { prompt, providerId });
    expect(created.status).toBe(202);
    const turnId = created.body.turn._id as string;
    const events = await settledEvents(user, turnId, 60_000);
    return { events, turn: await waitForTurn(user, turnId, ["completed", "failed"]) };
  }

  const text = (content: unknown) =>
    typeof content === "string" ? content : JSON.stringify(content);

  beforeAll(async () => {
    server = await startTestServer(
      { mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl") },
      `drone_commands_${process.pid}`,
    );
    model = await startScriptedModel();
    user = await signup(server.url, "drone-commands");
    remote = await startRemoteMcpServer({ bearerToken: bearer, prompts: true });
    const provider = await user.post("/api/providers", {
      name: "scripted",
      baseUrl: model.baseUrl,
      apiKey: "sk-commands-provider",
      modelId: "scripted-model",
    });
    providerId = provider.body.provider._id;

    const repository = await createRemote({
      "README.md": "# Shop\n",
      "src/app.ts": "export const total = (a: number, b: number) => a - b;\n",
      ".gadget/commands/review.md": review,
      ".gadget/commands/big.md": `---\ndescription: Too big\n---\n${"y".repeat(70_000)}\n`,
      ".agents/skills/release/SKILL.md": release,
      ".agents/skills/huge/SKILL.md": `---\ndescription: A very long one\n---\n${"x".repeat(300_000)}\n`,
    });
    // Links committed into the repository: a command file and a SKILL.md pointing out of it.
    const scratch = await makeTempDir("gadget-commands-links-");
    runGit(scratch, "clone", repository.bare, "clone");
    const clone = path.join(scratch, "clone");
    runGit(clone, "checkout", "main");
    await symlink("../../README.md", path.join(clone, ".gadget/commands/linked.md"));
    await mkdir(path.join(clone, ".agents/skills/leak"), { recursive: true });
    await symlink("/etc/hostname", path.join(clone, ".agents/skills/leak/SKILL.md"));
    await writeFile(path.join(clone, ".gadget/commands/notes.txt"), "not a command\n");
    runGit(clone, "add", "-A");
    runGit(clone, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-m", "links");
    runGit(clone, "push", "origin", "main");

    const created = await user.post("/api/projects", { name: "Shop", gitUrl: repository.bare });
    projectId = created.body.project._id;
    const patched = await user.patch(`/api/projects/${projectId}`, {
      mcpServers: [{ name: "tracker", url: remote.url, bearerToken: bearer }],
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);

    const home = await freshHome();
    const config = path.join(home, ".config", "gadget-drone", "config.json");
    const registered = await registerWithCli(user, server.url, {
      name: "commands-drone",
      workspace: path.join(home, "workspaces"),
      config,
      home,
    });
    expect(registered.code, registered.stderr).toBe(0);
    drone = startCli(["--config", config, "--json"], home);
    await waitForDroneOnline(user, "commands-drone");
  }, 120_000);

  afterAll(async () => {
    drone?.child.kill("SIGKILL");
    await remote?.close();
    await model?.close();
    await server?.close();
  });

  it("expands a command with its arguments before the model sees it, and the turn shows it", async () => {
    const sessionId = await session();
    const first = model.chatRequests.length;
    model.enqueue({ text: "Reviewed: total subtracts." });
    const { events, turn: done } = await turn(sessionId, "/review src/app.ts");
    expect(done.status).toBe("completed");

    const messages = model.chatRequests[first]?.messages ?? [];
    const user = messages.filter((message) => message.role === "user").map((m) => text(m.content));
    expect(user).toContain("Review src/app.ts carefully and list every bug you find.");
    expect(user.join("\n")).not.toContain("/review");
    const command = events.find((event) => event.type === "command");
    expect(command?.data).toEqual({
      name: "review",
      source: "file",
      origin: ".gadget/commands/review.md",
      arguments: "src/app.ts",
      prompt: "Review src/app.ts carefully and list every bug you find.",
    });

    // The system prompt lists the skills by name and description, never their bodies or links.
    const system = text(messages[0]?.content);
    expect(system).toContain("## Skills");
    expect(system).toContain("- release: How we cut a release");
    expect(system).toContain("- huge: A very long one");
    expect(system).not.toContain("RELEASE-STEP-MARKER");
    expect(system).not.toContain("leak");
  }, 90_000);

  it("ends a turn with an unknown command before any model call, naming the commands there are", async () => {
    const sessionId = await session();
    const before = model.chatRequests.length;
    const { events, turn: done } = await turn(sessionId, "/reveiw src/app.ts");
    expect(done.status).toBe("failed");
    const error = events.find((event) => event.type === "error");
    expect(error?.data.code).toBe("unknown_command");
    expect(error?.data.message).toContain("Unknown command /reveiw");
    expect(error?.data.message).toContain("/review");
    expect(error?.data.message).toContain("/mcp__tracker__summarize");
    // A linked command file is no command.
    expect(error?.data.message).not.toContain("/linked");
    expect(model.chatRequests.length).toBe(before);

    // A command file over 64 KiB is listed as such and refused when called.
    const big = await turn(sessionId, "/big now");
    expect(big.turn.status).toBe("failed");
    const refused = big.events.find((event: { type: string }) => event.type === "error");
    expect(refused?.data).toEqual({
      code: "command_failed",
      message: "The command /big cannot be used: .gadget/commands/big.md is over 64 KiB",
    });
    expect(model.chatRequests.length).toBe(before);
  }, 90_000);

  it("runs an MCP server's prompt as a command, its words as the prompt's arguments", async () => {
    const sessionId = await session();
    const first = model.chatRequests.length;
    model.enqueue({ text: "Summarised." });
    const { events, turn: done } = await turn(sessionId, "/mcp__tracker__summarize flaky terse");
    expect(done.status).toBe("completed");
    const expected = `Summarise the tracker's open issues about "flaky" in a terse style.`;
    const user = (model.chatRequests[first]?.messages ?? [])
      .filter((message) => message.role === "user")
      .map((message) => text(message.content));
    expect(user).toContain(expected);
    expect(events.find((event) => event.type === "command")?.data).toMatchObject({
      name: "mcp__tracker__summarize",
      source: "mcp",
      origin: "tracker",
      prompt: expected,
    });

    // A prompt that fails says so in one line, before any model call.
    const before = model.chatRequests.length;
    const broken = await turn(sessionId, "/mcp__tracker__broken");
    expect(broken.turn.status).toBe("failed");
    const error = broken.events.find((event: { type: string }) => event.type === "error");
    expect(error?.data.code).toBe("command_failed");
    expect(error?.data.message).toContain('prompt "broken" of MCP server "tracker"');
    expect(error?.data.message).toContain("prompt store is down");
    expect(model.chatRequests.length).toBe(before);
  }, 90_000);

  it("lets the model load a skill in ask mode; a linked SKILL.md is refused and a huge one capped", async () => {
    const sessionId = await session("ask");
    const first = model.chatRequests.length;
    model.enqueue(
      {
        toolCalls: [
          { name: "load_skill", arguments: { name: "release" } },
          { name: "load_skill", arguments: { name: "leak" } },
          { name: "load_skill", arguments: { name: "huge" } },
        ],
      },
      { text: "Here is how to cut a release." },
    );
    const { turn: done } = await turn(sessionId, "How do we cut a release?");
    expect(done.status).toBe("completed");
    const offered = (model.chatRequests[first]?.tools ?? []).map((tool) => tool.function.name);
    expect(offered).toContain("load_skill");
    expect(offered).not.toContain("write_file");

    const results = (model.chatRequests[first + 1]?.messages ?? [])
      .filter((message) => message.role === "tool")
      .map((message) => text(message.content));
    expect(results[0]).toContain("RELEASE-STEP-MARKER");
    expect(results[1]).toContain("symbolic link");
    // Cut by load_skill before the engine's own cut of long outputs: the model reads where it ends.
    expect(results[2]?.includes("(cut: .agents/skills/huge/SKILL.md is")).toBe(true);
    expect(results[2]?.length).toBeLessThan(34_000);
  }, 90_000);

  it("lists the project's commands for the composer: files as committed, then MCP prompts", async () => {
    const sessionId = await session();
    const listed = await user.get(`/api/projects/${projectId}/commands?session=${sessionId}`);
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    expect(listed.body.commands).toEqual([
      { name: "big", description: "(too large: over 64 KiB)", source: "file" },
      {
        name: "review",
        description: "Review a file the team's way",
        source: "file",
        argumentHint: "<file>",
      },
      {
        name: "mcp__tracker__summarize",
        description: "Summarise the tracker's issues about a topic.",
        source: "mcp",
        server: "tracker",
        argumentHint: "<topic> [style]",
      },
      {
        name: "mcp__tracker__broken",
        description: "Always fails.",
        source: "mcp",
        server: "tracker",
      },
    ]);
    const stranger = await signup(server.url, "drone-commands-other");
    expect((await stranger.get(`/api/projects/${projectId}/commands`)).status).toBe(404);
    expect((await user.get(`/api/projects/${projectId}/commands?session=nope`)).status).toBe(400);
  }, 60_000);
});
