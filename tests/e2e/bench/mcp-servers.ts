// MCP servers at a turn's start: how long the drone takes from a turn asking for its session's
// servers to holding their tools — cold (the session's first turn: the stdio server started inside
// bubblewrap, initialised, its tools listed), warm (a later turn: the server kept alive) and a
// remote server over Streamable HTTP — each beside the SDK's own client doing the same work
// unconfined (connect + listTools; warm: listTools on a connected client), in the same run.
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { confine } from "@gadget/sandbox";
import { makeTempDir, removeTempDirs } from "@gadget/testkit";
import { bundleMcpFixtureServer, startRemoteMcpServer } from "@gadget/testkit/mcp";
import { markdownTable, median, time } from "@gadget/testkit/measure";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpManager, type McpTurnRequest } from "gadget-drone";
import { droneSandbox } from "gadget-drone/testing";

const rounds = Number(process.env.BENCH_MCP_ROUNDS ?? 9);
const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const bearer = "bench-bearer-token";

const workspace = await makeTempDir("gadget-mcp-bench-");
const script = path.join(workspace, "mcp-server.mjs");
await writeFile(script, await bundleMcpFixtureServer());
const { sandbox, hiddenPaths } = await droneSandbox({
  server: "http://127.0.0.1:1",
  droneId: "665f1c2e9b1d4a0000000001",
  credential: "bench",
  name: "bench",
  workspace: await makeTempDir("gadget-mcp-bench-drone-"),
  capacity: 1,
  registeredAt: new Date().toISOString(),
});
const confinement = confine(sandbox, {
  workspace,
  home: await makeTempDir("gadget-mcp-bench-home-"),
  network: { mode: "none", allowedHosts: [] },
  hidden: hiddenPaths,
});
const remote = await startRemoteMcpServer({ bearerToken: bearer });
const manager = new McpManager({ logger: quiet, env: { PATH: process.env.PATH } });

const request = (session: string, servers: McpTurnRequest["servers"]): McpTurnRequest => ({
  session,
  servers,
  confinement,
  workspace,
  programDirectory: workspace,
  policy: "none",
  secretValues: [],
  onWarning: (message) => {
    throw new Error(message);
  },
});
const stdio = [{ name: "tracker", command: ["node", script], env: {} }];
const remoteServers = [{ name: "remote", url: remote.url, bearerToken: bearer, env: {} }];

async function sdkConnect(transport: StdioClientTransport | StreamableHTTPClientTransport) {
  const client = new Client({ name: "bench", version: "0" });
  await client.connect(transport);
  const { tools } = await client.listTools();
  if (tools.length === 0) throw new Error("no tools");
  return client;
}

const samples = {
  cold: [] as number[],
  coldBaseline: [] as number[],
  warm: [] as number[],
  warmBaseline: [] as number[],
  remote: [] as number[],
  remoteBaseline: [] as number[],
};
try {
  for (let round = 0; round < rounds; round++) {
    const session = `bench:${round}`;
    let lease = await manager.open(request(session, stdio));
    // The first round warms the file cache for both sides; it is not counted.
    lease.release();
    let client: Client | undefined;
    const cold = await time(async () => {
      lease = await manager.open(request(`${session}:cold`, stdio));
    });
    const coldBaseline = await time(async () => {
      client = await sdkConnect(new StdioClientTransport({ command: "node", args: [script] }));
    });
    lease.release();
    const warm = await time(async () => {
      lease = await manager.open(request(`${session}:cold`, stdio));
    });
    const warmBaseline = await time(() => client?.listTools());
    lease.release();
    await client?.close();
    const remoteTime = await time(async () => {
      (await manager.open(request(`${session}:remote`, remoteServers))).release();
    });
    let connected: Client | undefined;
    const remoteBaseline = await time(async () => {
      connected = await sdkConnect(
        new StreamableHTTPClientTransport(new URL(remote.url), {
          requestInit: { headers: { authorization: `Bearer ${bearer}` } },
        }),
      );
    });
    await connected?.close();
    if (round === 0) continue;
    samples.cold.push(cold);
    samples.coldBaseline.push(coldBaseline);
    samples.warm.push(warm);
    samples.warmBaseline.push(warmBaseline);
    samples.remote.push(remoteTime);
    samples.remoteBaseline.push(remoteBaseline);
    // Sessions of earlier rounds stop, as idle ones would.
    await manager.stopIdle(Date.now() + 3_600_000);
  }
  const fmt = (values: number[]) => median(values).toFixed(1);
  const ratio = (drone: number[], baseline: number[]) =>
    `${(median(drone) / median(baseline)).toFixed(2)}×`;
  console.log(
    `\nMCP servers at turn start: the session's servers to their listed tools, median of ${rounds - 1} rounds (sandbox: ${sandbox.info.kind} ${sandbox.info.version ?? ""})\n`,
  );
  console.log(
    markdownTable(
      ["case", "drone (ms)", "baseline", "baseline (ms)", "ratio"],
      [
        [
          "cold: stdio server started in the sandbox, its tools listed (first turn)",
          fmt(samples.cold),
          "SDK `StdioClientTransport` connect + listTools, unconfined",
          fmt(samples.coldBaseline),
          ratio(samples.cold, samples.coldBaseline),
        ],
        [
          "warm: the session's server kept alive (a later turn)",
          fmt(samples.warm),
          "SDK `listTools` on a connected client",
          fmt(samples.warmBaseline),
          ratio(samples.warm, samples.warmBaseline),
        ],
        [
          "remote: Streamable HTTP on loopback with a bearer token",
          fmt(samples.remote),
          "SDK `StreamableHTTPClientTransport` connect + listTools",
          fmt(samples.remoteBaseline),
          ratio(samples.remote, samples.remoteBaseline),
        ],
      ],
    ),
  );
} finally {
  await manager.close();
  await remote.close();
  await removeTempDirs();
}
