// Reference MCP servers from the npm registry through real drone turns in bubblewrap: the
// filesystem server started without a directory works in the session's worktree (the client's
// root), `npx -y` without a network fails in one clear line and is not waited for on the next
// turn, a server installed where the sandbox cannot see is named as such, server-memory's EROFS
// default is explained, and a resource the prompt names reaches the model with it. The
// "everything" server: its long operation's progress reaches the turn live and its task-only tool
// is not offered (stdio, in the sandbox); over Streamable HTTP it is restarted between two turns
// and the second reconnects; started SSE-only, the drone falls back to the old transport.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { readFile, symlink, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import path from "node:path";
import { promisify } from "node:util";
import type { GadgetServer } from "@gadget/server";
import { startTestServer } from "@gadget/server/testing";
import { makeTempDir, type ScriptedModel, startScriptedModel } from "@gadget/testkit";
import { bundleMcpFixtureServer } from "@gadget/testkit/mcp";
import { type ApiClient, signup } from "@gadget/testkit/wire";
import { createRemote, worktreeDirectory } from "gadget-drone/testing";
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

// biome-ignore lint/suspicious/noExplicitAny: test convenience
type Events = any[];

const warningsOf = (events: Events): string[] =>
  events
    .filter((event) => event.type === "status" && event.data.level === "warning")
    .map((event) => event.data.message as string);

describe("reference MCP servers from the npm registry in real drone turns", () => {
  let server: GadgetServer;
  let model: ScriptedModel;
  let user: ApiClient;
  let home: string;
  let drone: DroneProcess | undefined;
  let providerId: string;
  /** Where the filesystem server is installed: shown to the sandbox by the drone's config. */
  let installed: string;
  /** The same server through a directory the sandbox does not show. */
  let hiddenProgram: string;
  let fixture: string;
  const config = () => path.join(home, ".config", "gadget-drone", "config.json");
  const workspaceRoot = () => path.join(home, "workspaces");
  const everythingProcesses: ChildProcess[] = [];
  const everything = () =>
    path.join(installed, "node_modules", "@modelcontextprotocol", "server-everything", "dist");

  /** server-everything on the host over `transport`, on `port`; resolves once it listens. */
  async function startEverything(transport: "streamableHttp" | "sse", port: number) {
    const child = spawn(process.execPath, [path.join(everything(), "index.js"), transport], {
      env: { ...process.env, PORT: String(port) },
      stdio: ["ignore", "ignore", "pipe"],
    });
    everythingProcesses.push(child);
    await new Promise<void>((resolve, reject) => {
      let said = "";
      child.stderr?.on("data", (chunk) => {
        said += chunk;
        if (/listening on port|running on port/i.test(said)) resolve();
      });
      child.once("exit", (code) => reject(new Error(`server-everything exited ${code}: ${said}`)));
    });
    return child;
  }

  async function freeLoopbackPort(): Promise<number> {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const { port } = probe.address() as { port: number };
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    return port;
  }

  /** The tool results the model read in its request `index` (each call ok in the turn too). */
  const toolResults = (events: Events, index: number): string[] => {
    const results = events.filter((event) => event.type === "tool_result");
    expect(results.map((event) => event.data.ok)).toEqual(results.map(() => true));
    return (model.chatRequests[index]?.messages ?? [])
      .filter((message) => message.role === "tool")
      .map((message) => String(message.content));
  };

  async function session(name: string, mcpServers: unknown[]) {
    const repository = await createRemote({
      "README.md": `# ${name}\n`,
      "mcp-server.mjs": fixture,
    });
    const created = await user.post("/api/projects", { name, gitUrl: repository.bare });
    const patched = await user.patch(`/api/projects/${created.body.project._id}`, { mcpServers });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const opened = await user.post(`/api/projects/${created.body.project._id}/sessions`, {
      name: "s",
    });
    return {
      sessionId: opened.body.session._id as string,
      slug: created.body.project.slug as string,
    };
  }

  async function turn(sessionId: string, prompt: string): Promise<Events> {
    const created = await user.post(`/api/sessions/${sessionId}/turns`, { prompt, providerId });
    expect(created.status).toBe(202);
    const events: Events = await settledEvents(user, created.body.turn._id, 120_000);
    const finished = await waitForTurn(user, created.body.turn._id, ["completed", "failed"]);
    expect(finished.status).toBe("completed");
    return events;
  }

  beforeAll(async () => {
    const directory = await makeTempDir("gadget-mcp-npm-");
    installed = path.join(directory, "shown");
    await promisify(execFile)(
      "npm",
      ["install", "--prefix", installed, "--no-audit", "--no-fund", "--loglevel=error"].concat(
        "@modelcontextprotocol/server-filesystem",
        "@modelcontextprotocol/server-memory",
        "@modelcontextprotocol/server-everything@2026.8.31",
      ),
      { timeout: 240_000 },
    );
    await symlink(installed, path.join(directory, "hidden"));
    hiddenProgram = path.join(directory, "hidden", "node_modules", "@modelcontextprotocol");
    hiddenProgram = path.join(hiddenProgram, "server-filesystem", "dist", "index.js");
    server = await startTestServer(
      { mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl"), droneGraceMs: 30_000 },
      `drone_mcp_npm_${process.pid}`,
    );
    model = await startScriptedModel();
    user = await signup(server.url, "drone-mcp-npm");
    const provider = await user.post("/api/providers", {
      name: "scripted",
      baseUrl: model.baseUrl,
      apiKey: "sk-mcp-npm-provider",
      modelId: "scripted-model",
    });
    providerId = provider.body.provider._id;
    fixture = await bundleMcpFixtureServer();
    home = await freshHome();
    const registered = await registerWithCli(user, server.url, {
      name: "mcp-npm-drone",
      workspace: workspaceRoot(),
      config: config(),
      home,
    });
    expect(registered.code, registered.stderr).toBe(0);
    // The drone's owner shows the install folder to the sandbox (its /tmp is private otherwise).
    const stored = JSON.parse(await readFile(config(), "utf8"));
    stored.sandbox = { ...stored.sandbox, readOnlyPaths: [installed] };
    await writeFile(config(), JSON.stringify(stored, null, 2));
    drone = startCli(["--config", config(), "--json"], home);
    await waitForDroneOnline(user, "mcp-npm-drone", 90_000);
  }, 300_000);

  afterAll(async () => {
    for (const child of everythingProcesses) child.kill("SIGKILL");
    drone?.child.kill("SIGKILL");
    await model?.close();
    await server?.close();
  });

  it("runs the filesystem server started without a directory in the session's worktree, its root", async () => {
    const program = path.join(installed, "node_modules", ".bin", "mcp-server-filesystem");
    const { sessionId, slug } = await session("Files", [{ name: "files", command: [program] }]);
    const first = model.chatRequests.length;
    model.enqueue(
      { toolCalls: [{ name: "mcp__files__list_allowed_directories", arguments: {} }] },
      {
        toolCalls: [
          {
            name: "mcp__files__write_file",
            arguments: {
              path: path.join(worktreeDirectory(workspaceRoot(), slug, sessionId), "notes.md"),
              content: "written by the filesystem server\n",
            },
          },
        ],
      },
      { text: "Wrote it." },
    );
    const events = await turn(sessionId, "Write a note");
    expect(warningsOf(events)).toEqual([]);
    const worktree = worktreeDirectory(workspaceRoot(), slug, sessionId);
    const tools = (index: number) =>
      (model.chatRequests[first + index]?.messages ?? [])
        .filter((message) => message.role === "tool")
        .map((message) => String(message.content));
    expect(tools(1).at(-1)).toContain(worktree);
    expect(await readFile(path.join(worktree, "notes.md"), "utf8")).toBe(
      "written by the filesystem server\n",
    );
  });

  it("fails `npx -y` without a network in one clear line, and does not wait for it on the next turn", async () => {
    const { sessionId } = await session("Npx", [
      { name: "memory", command: ["npx", "-y", "@modelcontextprotocol/server-memory"] },
    ]);
    model.enqueue({ text: "First." });
    const first = warningsOf(await turn(sessionId, "Remember this"));
    expect(first).toHaveLength(1);
    expect(first[0]).toMatch(
      /^MCP server "memory" is unavailable, the turn goes on without its tools: /,
    );
    expect(first[0]).toContain("ENOTCACHED");
    expect(first[0]).toContain(
      'The project\'s network is "No network", so `npx` cannot download the server',
    );

    model.enqueue({ text: "Second." });
    const second = warningsOf(await turn(sessionId, "And this"));
    // Not started again: the same cause from memory, with when it is tried next.
    expect(second).toEqual([
      expect.stringMatching(
        /ENOTCACHED.*\(not tried again for \d+ s, or until its settings change\)$/,
      ),
    ]);
  });

  it("tells server-memory's user where to keep its data when its default file is read-only (EROFS)", async () => {
    const program = path.join(installed, "node_modules", ".bin", "mcp-server-memory");
    const { sessionId } = await session("Memory", [{ name: "memory", command: [program] }]);
    const first = model.chatRequests.length;
    model.enqueue(
      {
        toolCalls: [
          {
            name: "mcp__memory__create_entities",
            arguments: { entities: [{ name: "Ada", entityType: "person", observations: ["x"] }] },
          },
        ],
      },
      { text: "Could not remember." },
    );
    await turn(sessionId, "Remember Ada");
    const told = (model.chatRequests[first + 1]?.messages ?? [])
      .filter((message) => message.role === "tool")
      .map((message) => String(message.content))
      .at(-1);
    expect(told).toMatch(/EROFS|read-only file system/);
    expect(told).toContain("MEMORY_FILE_PATH");
  });

  it("names a server installed where the sandbox cannot see it", async () => {
    const { sessionId } = await session("Hidden", [
      { name: "hidden", command: ["node", hiddenProgram] },
    ]);
    model.enqueue({ text: "Nothing." });
    const warnings = warningsOf(await turn(sessionId, "Try it"));
    expect(warnings).toEqual([
      expect.stringContaining(
        `${hiddenProgram} exists on the drone but not inside the sandbox (/tmp is private in the sandbox)`,
      ),
    ]);
  });

  it("attaches a resource the prompt names as @server:uri, and offers the resource tools", async () => {
    const { sessionId } = await session("Resources", [
      { name: "tracker", command: ["node", "mcp-server.mjs"], tools: ["read_note"] },
    ]);
    const first = model.chatRequests.length;
    model.enqueue({ text: "Summarised." });
    const events = await turn(sessionId, "Summarise @tracker:notes://tracker/release please");
    const request = model.chatRequests[first];
    const prompt = (request?.messages ?? []).filter((message) => message.role === "user").at(-1);
    expect(String(prompt?.content)).toContain(
      "Summarise @tracker:notes://tracker/release please\n\nAttached MCP resource @tracker:notes://tracker/release:\n# Release stdio\nAll fixed.",
    );
    const names = (request?.tools ?? []).map((tool) => tool.function.name);
    expect(names).toEqual(expect.arrayContaining(["list_mcp_resources", "read_mcp_resource"]));
    expect(
      events.some(
        (event) =>
          event.type === "status" &&
          event.data.message ===
            "Attached MCP resource @tracker:notes://tracker/release (26 characters)",
      ),
    ).toBe(true);
  });

  it("shows server-everything's progress live in the sandbox, and does not offer its task-only tool", async () => {
    const program = path.join(installed, "node_modules", ".bin", "mcp-server-everything");
    const { sessionId } = await session("Everything", [{ name: "everything", command: [program] }]);
    const first = model.chatRequests.length;
    model.enqueue(
      {
        toolCalls: [
          {
            name: "mcp__everything__trigger-long-running-operation",
            arguments: { duration: 2, steps: 2 },
          },
        ],
      },
      { text: "It ran." },
    );
    const events = await turn(sessionId, "Run the long operation");
    expect(warningsOf(events)).toEqual([]);
    const output = events
      .filter((event) => event.type === "tool_output")
      .map((event) => event.data.text)
      .join("");
    expect(output).toBe("progress 1/2\nprogress 2/2\n");
    const types = events.map((event) => event.type);
    expect(types.indexOf("tool_output")).toBeLessThan(types.indexOf("tool_result"));
    expect(toolResults(events, first + 1).join("\n")).toContain("Long running operation completed");
    const names = (model.chatRequests[first]?.tools ?? []).map((tool) => tool.function.name);
    // get-roots-list is registered with the task-only tool, once the client is known: it was listed.
    expect(names).toEqual(
      expect.arrayContaining(["mcp__everything__echo", "mcp__everything__get-roots-list"]),
    );
    expect(names).not.toContain("mcp__everything__simulate-research-query");
  });

  it("reconnects to server-everything over Streamable HTTP after it restarted between turns", async () => {
    const port = await freeLoopbackPort();
    let remote = await startEverything("streamableHttp", port);
    const { sessionId } = await session("Everything remote", [
      { name: "remote", url: `http://127.0.0.1:${port}/mcp` },
    ]);
    let first = model.chatRequests.length;
    model.enqueue(
      { toolCalls: [{ name: "mcp__remote__echo", arguments: { message: "before" } }] },
      { text: "One." },
    );
    const before = await turn(sessionId, "Echo before");
    expect(warningsOf(before)).toEqual([]);
    expect(toolResults(before, first + 1).join("\n")).toContain("Echo: before");

    remote.kill("SIGKILL");
    remote = await startEverything("streamableHttp", port);
    first = model.chatRequests.length;
    model.enqueue(
      { toolCalls: [{ name: "mcp__remote__echo", arguments: { message: "after" } }] },
      { text: "Two." },
    );
    const after = await turn(sessionId, "Echo after");
    expect(warningsOf(after)).toEqual([]);
    expect(toolResults(after, first + 1).join("\n")).toContain("Echo: after");
    remote.kill("SIGKILL");
  });

  it("falls back to the old HTTP+SSE transport for an SSE-only server-everything", async () => {
    const port = await freeLoopbackPort();
    const remote = await startEverything("sse", port);
    const { sessionId } = await session("Everything SSE", [
      { name: "old", url: `http://127.0.0.1:${port}/sse` },
    ]);
    const first = model.chatRequests.length;
    model.enqueue(
      { toolCalls: [{ name: "mcp__old__echo", arguments: { message: "over sse" } }] },
      { text: "Old but fine." },
    );
    const events = await turn(sessionId, "Echo over SSE");
    expect(warningsOf(events)).toEqual([]);
    expect(toolResults(events, first + 1).join("\n")).toContain("Echo: over sse");
    remote.kill("SIGKILL");
  });
});
