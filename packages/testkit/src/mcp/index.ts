// MCP servers for tests, written with the official SDK: the fixture as one bundled file a
// sandboxed `node` can run, and a remote one over Streamable HTTP with a bearer token.
import { randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { build } from "esbuild";
import { registerFixturePrompts } from "./fixture-prompts.ts";
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
  /** Forgets every session, as a restarted server would (stateful servers only). */
  restart(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The fixture's tools over Streamable HTTP on loopback; requests without
 * `Authorization: Bearer <bearerToken>` get 401. Stateless (a server per request) unless
 * `stateful`: then sessions are kept until `restart()`, and an unknown session id gets 400
 * "No valid session ID provided", as the reference servers answer.
 */
export async function startRemoteMcpServer(options: {
  bearerToken: string;
  stateful?: boolean;
  /** Also offer the fixture's prompts (stateless servers only). */
  prompts?: boolean;
}): Promise<RemoteMcpServer> {
  const counts = { refused: 0, served: 0 };
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const server = http.createServer(async (request, response) => {
    if (options.stateful) {
      if (request.headers.authorization !== `Bearer ${options.bearerToken}`) {
        counts.refused++;
        response.writeHead(401).end();
        return;
      }
      counts.served++;
      await serveStateful(request, response, sessions);
      return;
    }
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
    if (options.prompts) registerFixturePrompts(mcp);
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
    restart: async () => {
      const open = [...sessions.values()];
      sessions.clear();
      await Promise.all(open.map((transport) => transport.close()));
    },
    close: () => closeServer(server),
  };
}

function closeServer(server: http.Server): Promise<void> {
  return new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
}

/** One request to the stateful server: an initialize opens a session, the rest name one. */
async function serveStateful(
  request: http.IncomingMessage,
  response: http.ServerResponse,
  sessions: Map<string, StreamableHTTPServerTransport>,
): Promise<void> {
  const id = request.headers["mcp-session-id"];
  const known = typeof id === "string" ? sessions.get(id) : undefined;
  if (known) {
    await known.handleRequest(request, response);
    return;
  }
  if (id !== undefined || request.method !== "POST") {
    response
      .writeHead(400, { "content-type": "application/json" })
      .end(
        '{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}',
      );
    return;
  }
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: randomUUID,
    onsessioninitialized: (session) => {
      sessions.set(session, transport);
    },
  });
  const mcp = new McpServer({ name: "gadget-remote-fixture", version: "1.0.0" });
  registerFixtureTools(mcp, "remote");
  await mcp.connect(transport);
  await transport.handleRequest(request, response);
}

export interface SseMcpServer {
  /** e.g. http://127.0.0.1:41234/sse */
  url: string;
  close(): Promise<void>;
}

/**
 * The fixture's tools over the old HTTP+SSE transport (GET /sse, POST /messages), as servers
 * written before Streamable HTTP: a POST to /sse gets an HTML 404 page, as Express answers.
 */
export async function startSseMcpServer(): Promise<SseMcpServer> {
  const transports = new Map<string, SSEServerTransport>();
  const server = http.createServer(async (request, response) => {
    const url = new URL(request.url ?? "/", "http://localhost");
    if (request.method === "GET" && url.pathname === "/sse") {
      const transport = new SSEServerTransport("/messages", response);
      transports.set(transport.sessionId, transport);
      const mcp = new McpServer({ name: "gadget-sse-fixture", version: "1.0.0" });
      registerFixtureTools(mcp, "sse");
      response.on("close", () => transports.delete(transport.sessionId));
      await mcp.connect(transport);
      return;
    }
    const transport = transports.get(url.searchParams.get("sessionId") ?? "");
    if (request.method === "POST" && url.pathname === "/messages" && transport) {
      await transport.handlePostMessage(request, response);
      return;
    }
    response
      .writeHead(404, { "content-type": "text/html; charset=utf-8" })
      .end(
        `<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>Error</title>\n</head>\n<body>\n<pre>Cannot ${request.method} ${url.pathname}</pre>\n</body>\n</html>\n`,
      );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/sse`, close: () => closeServer(server) };
}
