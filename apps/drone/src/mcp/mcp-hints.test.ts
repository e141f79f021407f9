// The sandbox's own causes told with what to do: a package runner without a network, a program in
// a private /tmp directory, a data file in a read-only folder; nothing said when none applies.
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { confine, Unconfined } from "@gadget/sandbox";
import { makeTempDir } from "@gadget/testkit";
import { describe, expect, it } from "vitest";
import { readOnlyHint, startHint } from "./mcp-hints.ts";
import type { McpTurnRequest } from "./mcp-turn.ts";

function request(network: McpTurnRequest["network"], workspace = "/work/tree"): McpTurnRequest {
  return {
    session: "p:s",
    servers: [],
    confinement: confine(new Unconfined(), {
      workspace,
      home: workspace,
      network: { mode: "none", allowedHosts: [] },
      hidden: [],
    }),
    workspace,
    programDirectory: "/work/checkout",
    policy: "none",
    ...(network ? { network } : {}),
    secretValues: [],
    onWarning: () => {},
  };
}

describe("hints for MCP servers the sandbox stops", () => {
  it("tells a package runner without a network what to do, and says nothing with one", async () => {
    const npx = {
      name: "memory",
      command: ["npx", "-y", "@modelcontextprotocol/server-memory"],
      env: {},
    };
    const failure = "it exited (stderr: npm error code ENOTCACHED)";
    expect(await startHint(npx, request("none"), failure)).toContain(
      'The project\'s network is "No network", so `npx` cannot download the server',
    );
    expect(await startHint(npx, request(undefined), failure)).toContain("No network");
    expect(await startHint(npx, request("open"), failure)).toBeNull();
    expect(await startHint(npx, request("none"), "it exited (stderr: SyntaxError)")).toBeNull();
  });

  it("names a program that exists on the drone under /tmp, private in the sandbox", async () => {
    const directory = await makeTempDir("gadget-mcp-hint-");
    const program = path.join(directory, "server.mjs");
    await writeFile(program, "");
    const server = { name: "local", command: ["node", program], env: {} };
    const failure = `Error: Cannot find module '${program}'`;
    expect(await startHint(server, request("none"), failure)).toBe(
      `${program} exists on the drone but not inside the sandbox (/tmp is private in the sandbox): install the server in a system directory or the repository, or add its directory to the drone config's sandbox.readOnlyPaths`,
    );
    // Inside the worktree it is visible: the cause is elsewhere.
    expect(await startHint(server, request("none", directory), failure)).toBeNull();
    // A path that does not exist on the drone either: nothing to say about the sandbox.
    const missing = { name: "x", command: ["node", path.join(directory, "nope.mjs")], env: {} };
    expect(await startHint(missing, request("none"), failure)).toBeNull();
  });

  it("tells a tool that failed on a read-only file system where to keep its data", () => {
    expect(
      readOnlyHint("EROFS: read-only file system, open '/usr/lib/node_modules/x/memory.jsonl'"),
    ).toContain("MEMORY_FILE_PATH");
    expect(readOnlyHint("quota exceeded")).toBeNull();
  });
});
