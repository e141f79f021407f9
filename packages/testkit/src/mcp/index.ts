// MCP servers for tests, written with the official SDK: the fixture as one bundled file a
// sandboxed `node` can run, and a remote one over Streamable HTTP with a bearer token.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { build } from "esbuild";
import { registerFixtureTools } from "./fixture-server.ts";

export { registerFixtureTools } from "./fixture-server.ts";

let bundled: Promise<string> | undefined;

/**
 * The fixture server as the text of one self-contained ES module (SDK included), to commit into a
 * test project's repository and run as `node <file> [--crash|--hang]` inside the sandbox.
 */
export function bundleMcpFixtureServer(): Promise<string> {
  bundled ??= build({
    entryPoints: [fileURLToPath(new URL("./fixture-main.ts", import.meta.url))],
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    write: false,
    logLevel: "silent",
    banner: {
      js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
    },
  }).then((result) => result.outputFiles[0]?.text ?? "");
  return bundled;
}

export interface RemoteMcpServer {
  /** e.g. http://127.0.0.1:41234/mcp */
  url: string;
  /** Requests that came without the right bearer token (answered 401). */
  readonly refused: number;
  /** Requests served. */
  readonly served: number;
  close(): Promise<void>;
}

/**
 * The fixture's tools over Streamable HTTP (stateless: a server per request) on loopback; requests
 * without `Authorization: Bearer <bearerToken>` get 401.
 */
export async function startRemoteMcpServer(options: {
  bearerToken: string;
}): Promise<RemoteMcpServer> {
  const counts = { refused: 0, served: 0 };
  const server = http.createServer(async (request, response) => {
    if (request.headers.authorization !== `Bearer ${options.bearerToken}`) {
      counts.refused++;
      response
        .writeHead(401, { "content-type": "application/json" })
        .end('{"error":"unauthorized"}');
      return;
    }
    counts.served++;
    const mcp = new McpServer({ name: "gadget-remote-fixture", version: "1.0.0" });
    registerFixtureTools(mcp, "remote");
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    response.on("close", () => {
      void transport.close();
      void mcp.close();
    });
    try {
      await mcp.connect(transport);
      await transport.handleRequest(request, response);
    } catch (error) {
      if (!response.headersSent) response.writeHead(500).end(String(error));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    get refused() {
      return counts.refused;
    },
    get served() {
      return counts.served;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
