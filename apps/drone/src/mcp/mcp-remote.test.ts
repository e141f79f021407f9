// The MCP manager with remote servers written with the SDK: a server restarted between turns (its
// session forgotten), one that speaks only the old HTTP+SSE transport, and URLs that cannot work,
// each failure told in one line that names its cause.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { confine, Unconfined } from "@gadget/sandbox";
import { makeTempDir } from "@gadget/testkit";
import { startRemoteMcpServer, startSseMcpServer } from "@gadget/testkit/mcp";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { type McpLease, McpManager, type McpTurnRequest } from "./mcp-manager.ts";

const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const documentStub = { update: () => ({}), sections: {} };

describe("McpManager with remote servers", () => {
  let workspace: string;
  const managers: McpManager[] = [];
  const stops: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    workspace = await makeTempDir("gadget-mcp-remote-");
  });

  afterEach(async () => {
    await Promise.all(managers.splice(0).map((manager) => manager.close()));
    await Promise.all(stops.splice(0).map((stop) => stop()));
  });

  function manager(): McpManager {
    const created = new McpManager({ logger: quiet, env: { PATH: process.env.PATH } });
    managers.push(created);
    return created;
  }

  function request(servers: McpTurnRequest["servers"], warnings: string[] = []): McpTurnRequest {
    return {
      session: "p:s",
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
      secretValues: [],
      onWarning: (message) => warnings.push(message),
    };
  }

  async function call(lease: McpLease, name: string, input: Record<string, unknown> = {}) {
    const tool = lease.tools.find((candidate) => candidate.name === name);
    if (!tool) throw new Error(`no tool ${name}`);
    return tool.execute(input, {
      signal: new AbortController().signal,
      workspace,
      callId: "c1",
      document: documentStub,
    });
  }

  it("opens a new session once when a remote server restarted between turns", async () => {
    const remote = await startRemoteMcpServer({ bearerToken: "t0k", stateful: true });
    stops.push(() => remote.close());
    const mcp = manager();
    const servers = [{ name: "remote", url: remote.url, bearerToken: "t0k", env: {} }];
    const first = await mcp.open(request(servers));
    expect((await call(first, "mcp__remote__read_note", { id: "1" })).ok).toBe(true);
    first.release();

    await remote.restart();
    const warnings: string[] = [];
    const second = await mcp.open(request(servers, warnings));
    const after = await call(second, "mcp__remote__read_note", { id: "2" });
    expect(after).toMatchObject({
      ok: true,
      output: expect.stringContaining("note 2 from remote"),
    });
    expect(warnings).toEqual([]);
    second.release();
  });

  it("falls back to HTTP+SSE for an old server, and never quotes an HTML page", async () => {
    const legacy = await startSseMcpServer();
    stops.push(() => legacy.close());
    const mcp = manager();
    const warnings: string[] = [];
    const lease = await mcp.open(
      request(
        [
          { name: "legacy", url: legacy.url, env: {} },
          { name: "nowhere", url: legacy.url.replace("/sse", "/nothing"), env: {} },
        ],
        warnings,
      ),
    );
    expect(lease.tools.some((tool) => tool.name === "mcp__legacy__read_note")).toBe(true);
    expect((await call(lease, "mcp__legacy__read_note", { id: "s" })).output).toContain(
      "note s from sse",
    );
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('MCP server "nowhere" is unavailable');
    expect(warnings[0]).toContain("Cannot POST /nothing");
    expect(warnings[0]).not.toMatch(/<html|<pre|\n/);
    lease.release();
  });

  it("names the host and the network error of an unreachable URL", async () => {
    // A port nothing listens on: one taken, then freed.
    const probe = http.createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const mcp = manager();
    const warnings: string[] = [];
    const lease = await mcp.open(
      request(
        [
          { name: "down", url: `http://127.0.0.1:${port}/mcp`, env: {} },
          { name: "unknown", url: "http://no-such-host.invalid/mcp", env: {} },
          { name: "barred", url: "http://127.0.0.1:1/mcp", env: {} },
        ],
        warnings,
      ),
    );
    expect(lease.tools).toEqual([]);
    const prefix = "is unavailable, the turn goes on without its tools:";
    // The servers start together: their warnings come in any order.
    expect(warnings.sort()).toEqual([
      `MCP server "barred" ${prefix} cannot reach 127.0.0.1:1: bad port`,
      `MCP server "down" ${prefix} cannot reach 127.0.0.1:${port} (ECONNREFUSED)`,
      expect.stringMatching(
        /^MCP server "unknown" .* cannot reach no-such-host\.invalid \((ENOTFOUND|EAI_AGAIN)\)$/,
      ),
    ]);
  });
});
