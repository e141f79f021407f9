// The MCP manager with real servers written with the SDK (the fixture, run by node; the sandbox's
// confinement of them is proven in tests/e2e): tools and their permissions, results as text,
// reuse across turns, a restart after a crash, idle stop, servers that fail or hang, progress
// shown while a tool runs, and task-only tools left out.
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { confine, Unconfined } from "@gadget/sandbox";
import { makeTempDir } from "@gadget/testkit";
import { bundleMcpFixtureServer, startRemoteMcpServer } from "@gadget/testkit/mcp";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { type McpLease, McpManager, type McpTurnRequest } from "./mcp-manager.ts";

const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const documentStub = { update: () => ({}), sections: {} };

describe("McpManager", () => {
  let workspace: string;
  let script: string;
  const managers: McpManager[] = [];

  beforeAll(async () => {
    workspace = await makeTempDir("gadget-mcp-");
    script = path.join(workspace, "fixture.mjs");
    await writeFile(script, await bundleMcpFixtureServer());
  }, 60_000);

  afterEach(async () => {
    await Promise.all(managers.splice(0).map((manager) => manager.close()));
  });

  function manager(options: { idleMs?: number; startTimeoutMs?: number } = {}): McpManager {
    const created = new McpManager({ logger: quiet, env: { PATH: process.env.PATH }, ...options });
    managers.push(created);
    return created;
  }

  function request(
    servers: McpTurnRequest["servers"],
    warnings: string[] = [],
    session = "p:s",
  ): McpTurnRequest {
    return {
      session,
      servers,
      confinement: confine(new Unconfined(), {
        workspace,
        home: workspace,
        network: { mode: "none", allowedHosts: [] },
        hidden: [],
      }),
      workspace,
      programDirectory: workspace,
      policy: "none",
      secretValues: ["s3cret-value-9f2c"],
      onWarning: (message) => warnings.push(message),
    };
  }

  async function call(
    lease: McpLease,
    name: string,
    input: Record<string, unknown> = {},
    output: string[] = [],
  ) {
    const tool = lease.tools.find((candidate) => candidate.name === name);
    if (!tool) throw new Error(`no tool ${name}`);
    return tool.execute(input, {
      signal: new AbortController().signal,
      workspace,
      callId: "c1",
      document: documentStub,
      onOutput: (chunk) => output.push(chunk.text),
    });
  }

  it("offers a server's tools by safe names with their schemas and permissions, and turns results into text", async () => {
    const mcp = manager();
    const lease = await mcp.open(
      request([
        {
          name: "tracker",
          command: ["node", script],
          env: { FIXTURE_SECRET: "s3cret-value-9f2c" },
        },
      ]),
    );
    const byName = Object.fromEntries(lease.tools.map((tool) => [tool.name, tool]));
    expect(Object.keys(byName).sort()).toEqual([
      // The server offers resources: the model can list and read them.
      "list_mcp_resources",
      "mcp__tracker__count_slowly",
      "mcp__tracker__crash",
      "mcp__tracker__create_issue",
      "mcp__tracker__env_echo",
      "mcp__tracker__fail",
      "mcp__tracker__issues_search",
      "mcp__tracker__read_note",
      "mcp__tracker__read_path",
      "mcp__tracker__screenshot",
      "read_mcp_resource",
    ]);
    expect(byName.mcp__tracker__read_note?.permission).toBe("read");
    expect(byName.mcp__tracker__create_issue?.permission).toBe("write");
    expect(byName.mcp__tracker__fail?.permission).toBe("write");
    expect(byName.mcp__tracker__read_note?.jsonSchema).toMatchObject({
      type: "object",
      properties: { id: { type: "string", description: "the note's id" } },
      required: ["id"],
    });

    expect(await call(lease, "mcp__tracker__read_note", { id: "7" })).toMatchObject({
      ok: true,
      output: expect.stringContaining("note 7 from stdio"),
    });
    const failed = await call(lease, "mcp__tracker__fail");
    expect(failed.ok).toBe(false);
    expect(failed.output).toBe("the tracker refused: quota exceeded");
    expect(failed.summary).toContain("mcp · tracker › fail failed: the tracker refused");
    expect((await call(lease, "mcp__tracker__screenshot")).output).toBe(
      "the screen:\n[image: image/png, 68 bytes]",
    );
    // The value reached the server (its hash) and never the output (redacted).
    const echoed = await call(lease, "mcp__tracker__env_echo", { name: "FIXTURE_SECRET" });
    expect(echoed.output).toMatch(/^FIXTURE_SECRET=\[redacted\] sha256=[0-9a-f]{64}$/);
    expect(echoed.output).not.toContain("s3cret");
    // The server's working directory is the workspace.
    const created = await call(lease, "mcp__tracker__create_issue", { title: "Bug" });
    expect(created.output).toBe(`created issues/Bug.md in ${workspace}`);
    lease.release();
  });

  it("keeps a session's servers for its next turn, limits tools, and starts a dead one again", async () => {
    const mcp = manager();
    const servers = [
      { name: "tracker", command: ["node", script], env: {}, tools: ["read_note", "crash"] },
    ];
    const first = await mcp.open(request(servers));
    const offered = first.tools.map((tool) => tool.name);
    expect(offered.filter((name) => name.startsWith("mcp__"))).toEqual([
      "mcp__tracker__read_note",
      "mcp__tracker__crash",
    ]);
    const started = (await call(first, "mcp__tracker__read_note", { id: "1" })).output;
    first.release();
    const second = await mcp.open(request(servers));
    // The same process answers: the server was kept (its start time stays the same).
    expect(mcp.running).toBe(1);
    expect((await call(second, "mcp__tracker__read_note", { id: "1" })).ok).toBe(true);
    second.release();

    // A server that dies: the turn hears it, and the next call starts it again.
    const warnings: string[] = [];
    const third = await mcp.open(request(servers, warnings));
    await call(third, "mcp__tracker__crash");
    await expect.poll(() => warnings.length, { timeout: 5000 }).toBe(1);
    expect(warnings[0]).toBe(
      'MCP server "tracker" stopped: fixture exiting on request; it starts again when a tool of it is called or at the next turn',
    );
    expect(mcp.running).toBe(0);
    const again = await call(third, "mcp__tracker__read_note", { id: "2" });
    expect(again.ok).toBe(true);
    expect(mcp.running).toBe(1);
    expect(started).toContain("note 1");
    third.release();
  });

  it("stops a session's servers once it has been idle", async () => {
    const mcp = manager({ idleMs: 50 });
    const lease = await mcp.open(
      request([{ name: "tracker", command: ["node", script], env: {} }]),
    );
    expect(mcp.running).toBe(1);
    await mcp.stopIdle();
    expect(mcp.running).toBe(1); // a turn still holds it
    lease.release();
    await mcp.stopIdle(Date.now() + 100);
    expect(mcp.running).toBe(0);
  });

  it("leaves out a server that crashes, hangs or does not exist, saying why, and keeps the others", async () => {
    const mcp = manager({ startTimeoutMs: 1500 });
    const warnings: string[] = [];
    const lease = await mcp.open(
      request(
        [
          { name: "crashing", command: ["node", script, "--crash"], env: {} },
          { name: "hanging", command: ["node", script, "--hang"], env: {} },
          { name: "missing", command: ["no-such-mcp-server-program"], env: {} },
          { name: "good", command: ["node", script], env: {}, tools: ["fail"] },
        ],
        warnings,
      ),
    );
    const names = lease.tools.map((tool) => tool.name);
    expect(names.filter((name) => name.startsWith("mcp__"))).toEqual(["mcp__good__fail"]);
    expect(warnings).toHaveLength(3);
    expect(warnings.find((warning) => warning.includes('"crashing"'))).toContain(
      "fixture crashed on purpose",
    );
    expect(warnings.find((warning) => warning.includes('"hanging"'))).toContain(
      "no answer within 1.5 s",
    );
    expect(warnings.find((warning) => warning.includes('"missing"'))).toContain("ENOENT");
    lease.release();
  });

  it("reaches a remote server over Streamable HTTP with its bearer token", async () => {
    const remote = await startRemoteMcpServer({ bearerToken: "remote-token-5b1e" });
    try {
      const mcp = manager();
      const warnings: string[] = [];
      const lease = await mcp.open(
        request(
          [
            { name: "remote", url: remote.url, bearerToken: "remote-token-5b1e", env: {} },
            { name: "wrong", url: remote.url, bearerToken: "not-the-token", env: {} },
          ],
          warnings,
        ),
      );
      expect(lease.tools.filter((tool) => tool.name.startsWith("mcp__remote__"))).toHaveLength(9);
      expect(lease.tools.some((tool) => tool.name.startsWith("mcp__wrong__"))).toBe(false);
      expect(warnings).toEqual([expect.stringContaining('MCP server "wrong" is unavailable')]);
      expect(remote.refused).toBeGreaterThan(0);
      expect((await call(lease, "mcp__remote__read_note", { id: "r" })).output).toContain(
        "note r from remote",
      );
      lease.release();
    } finally {
      await remote.close();
    }
  });

  it("leaves out a tool that only runs as a task, and shows a tool's progress as it runs", async () => {
    // The server does list the task-only tool, as required.
    const direct = new Client({ name: "test", version: "0" });
    await direct.connect(new StdioClientTransport({ command: "node", args: [script] }));
    const listed = (await direct.listTools()).tools.find((tool) => tool.name === "research");
    await direct.close();
    expect(listed?.execution?.taskSupport).toBe("required");

    const mcp = manager();
    const lease = await mcp.open(
      request([{ name: "tracker", command: ["node", script], env: {} }]),
    );
    const names = lease.tools.map((tool) => tool.name);
    expect(names).toContain("mcp__tracker__count_slowly");
    expect(names).not.toContain("mcp__tracker__research");

    const output: string[] = [];
    const counted = await call(lease, "mcp__tracker__count_slowly", { to: 3 }, output);
    expect(counted).toMatchObject({ ok: true, output: "counted to 3" });
    expect(output).toEqual([
      "progress 1/3: counted 1\n",
      "progress 2/3: counted 2\n",
      "progress 3/3: counted 3\n",
    ]);
    lease.release();
  });

  it("explains a failed server by the meaningful end of its stderr, secrets redacted", async () => {
    const mcp = manager();
    const warnings: string[] = [];
    await mcp.open(
      request(
        [
          {
            name: "npx",
            command: ["node", script, "--noisy-crash"],
            env: { FIXTURE_SECRET: "s3cret-value-9f2c" },
          },
        ],
        warnings,
      ),
    );
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(
      "(stderr: npm error code EAI_AGAIN | npm error request to https://registry.example/pkg failed, token [redacted] | Error: getaddrinfo EAI_AGAIN registry.example)",
    );
    expect(warnings[0]).not.toContain("Node.js v20");
    expect(warnings[0]).not.toContain("s3cret");
  });
});
