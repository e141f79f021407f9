// The rest of "MCP complete" with real servers (the SDK fixture run by node, and the reference
// filesystem server installed from the npm registry): the worktree as the client's root, failed
// servers backed off across turns, resources listed, read and attached to a prompt, a call right
// after the server exited started again (closed or EPIPE), and the last progress before an answer kept.
import { execFile } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { confine, Unconfined } from "@gadget/sandbox";
import { makeTempDir } from "@gadget/testkit";
import { bundleMcpFixtureServer } from "@gadget/testkit/mcp";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { type McpLease, McpManager, type McpTurnRequest } from "./mcp-manager.ts";

const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const documentStub = { update: () => ({}), sections: {} };

describe("McpManager, complete", () => {
  let directory: string;
  let workspace: string;
  let script: string;
  const managers: McpManager[] = [];

  beforeAll(async () => {
    directory = await makeTempDir("gadget-mcp-complete-");
    workspace = path.join(directory, "worktree");
    await mkdir(workspace);
    script = path.join(directory, "fixture.mjs");
    await writeFile(script, await bundleMcpFixtureServer());
  }, 60_000);

  afterEach(async () => {
    await Promise.all(managers.splice(0).map((manager) => manager.close()));
  });

  function manager(): McpManager {
    const created = new McpManager({ logger: quiet, env: { PATH: process.env.PATH } });
    managers.push(created);
    return created;
  }

  function request(
    servers: McpTurnRequest["servers"],
    said: { warnings?: string[]; statuses?: string[] } = {},
  ): McpTurnRequest {
    return {
      session: "p:s",
      servers,
      confinement: confine(new Unconfined(), {
        workspace,
        home: directory,
        network: { mode: "none", allowedHosts: [] },
        hidden: [],
      }),
      workspace,
      programDirectory: directory,
      policy: "none",
      network: "none",
      secretValues: [],
      onWarning: (message) => said.warnings?.push(message),
      onStatus: (message) => said.statuses?.push(message),
    };
  }

  async function call(lease: McpLease, name: string, input: Record<string, unknown> = {}) {
    const tool = lease.tools.find((candidate) => candidate.name === name);
    if (!tool) throw new Error(`no tool ${name} in ${lease.tools.map((t) => t.name).join(", ")}`);
    const output: string[] = [];
    const result = await tool.execute(input, {
      signal: new AbortController().signal,
      workspace,
      callId: "c1",
      document: documentStub,
      onOutput: (chunk) => output.push(chunk.text),
    });
    return { ...result, live: output };
  }

  it("offers the worktree as the client's root: the reference filesystem server started without a directory works in it", async () => {
    const install = path.join(directory, "npm");
    await promisify(execFile)(
      "npm",
      ["install", "--prefix", install, "--no-audit", "--no-fund", "--loglevel=error"].concat(
        "@modelcontextprotocol/server-filesystem",
      ),
      { timeout: 240_000 },
    );
    await writeFile(path.join(workspace, "hello.txt"), "hello from the worktree\n");
    const mcp = manager();
    const warnings: string[] = [];
    const lease = await mcp.open(
      request(
        [
          {
            name: "files",
            command: [path.join(install, "node_modules/.bin/mcp-server-filesystem")],
            env: {},
          },
        ],
        { warnings },
      ),
    );
    expect(warnings).toEqual([]);
    // The server asks for the roots once initialised, while the turn goes on.
    await expect
      .poll(async () => (await call(lease, "mcp__files__list_allowed_directories")).output, {
        timeout: 20_000,
      })
      .toContain(workspace);
    const read = await call(lease, "mcp__files__read_text_file", {
      path: path.join(workspace, "hello.txt"),
    });
    expect(read).toMatchObject({ ok: true, output: "hello from the worktree\n" });
    lease.release();
  }, 300_000);

  it("does not wait for a failed server again on the next turn until its back-off passes, and retries a changed one at once", async () => {
    const mcp = manager();
    const failing = { name: "broken", command: ["node", script, "--crash"], env: {} };
    const first: string[] = [];
    await mcp.open(request([failing], { warnings: first }));
    expect(first).toEqual([expect.stringContaining("fixture crashed on purpose")]);

    // The next turn: one line, from memory, without starting it.
    const second: string[] = [];
    const lease = await mcp.open(request([failing], { warnings: second }));
    expect(second).toHaveLength(1);
    expect(second[0]).toMatch(
      /^MCP server "broken" is unavailable, the turn goes on without its tools: .*fixture crashed on purpose.* \(not tried again for \d+ s, or until its settings change\)$/,
    );
    expect(lease.tools).toEqual([]);

    // Its settings changed: tried at once (and it works now).
    const third: string[] = [];
    const fixed = await mcp.open(
      request([{ name: "broken", command: ["node", script], env: {}, tools: ["read_note"] }], {
        warnings: third,
      }),
    );
    expect(third).toEqual([]);
    expect((await call(fixed, "mcp__broken__read_note", { id: "1" })).ok).toBe(true);
  });

  it("lists and reads a server's resources, and attaches one a prompt names", async () => {
    const mcp = manager();
    const warnings: string[] = [];
    const statuses: string[] = [];
    const lease = await mcp.open(
      request([{ name: "tracker", command: ["node", script], env: {}, tools: [] }], {
        warnings,
        statuses,
      }),
    );
    const listed = await call(lease, "list_mcp_resources");
    expect(listed.output).toBe(
      "@tracker:notes://tracker/release release-notes (text/markdown) — The tracker's release notes.",
    );
    const read = await call(lease, "read_mcp_resource", {
      server: "tracker",
      uri: "notes://tracker/release",
    });
    expect(read).toMatchObject({ ok: true, output: "# Release stdio\nAll fixed." });
    const missing = await call(lease, "read_mcp_resource", { server: "tracker", uri: "notes://x" });
    expect(missing.ok).toBe(false);

    const prompt = "Summarise @tracker:notes://tracker/release. Ignore @tracker:notes://none";
    expect(await lease.attachResources(prompt)).toBe(
      `${prompt}\n\nAttached MCP resource @tracker:notes://tracker/release:\n# Release stdio\nAll fixed.`,
    );
    expect(statuses).toEqual([
      "Attached MCP resource @tracker:notes://tracker/release (26 characters)",
    ]);
    expect(warnings).toEqual([
      expect.stringMatching(
        /^MCP resource @tracker:notes:\/\/none could not be read, it is not attached: /,
      ),
    ]);
    // A prompt naming no resource is left as it is.
    expect(await lease.attachResources("email me@example.com")).toBe("email me@example.com");
  });

  it("starts a server again once when a call follows its exit at once (closed or EPIPE), and keeps the last progress before an answer", async () => {
    const mcp = manager();
    const warnings: string[] = [];
    const lease = await mcp.open(
      request([{ name: "tracker", command: ["node", script], env: {} }], { warnings }),
    );
    for (let round = 0; round < 3; round++) {
      expect((await call(lease, "mcp__tracker__crash")).output).toBe("exiting");
      // Sent while the server exits: whether the connection closes under it or the write meets
      // a pipe nobody reads (EPIPE), the server starts again and answers.
      const after = await call(lease, "mcp__tracker__read_note", { id: String(round) });
      expect(after, JSON.stringify(after)).toMatchObject({ ok: true });
      // The answer follows the last progress at once: all of it reaches the row, every time.
      const counted = await call(lease, "mcp__tracker__count_slowly", { to: 2 });
      expect(counted.live).toEqual(["progress 1/2: counted 1\n", "progress 2/2: counted 2\n"]);
    }
    expect(mcp.running).toBe(1);
    lease.release();
  });
});
