// One MCP server's connection: a stdio server started inside the turn's sandbox (or a remote one
// over Streamable HTTP, falling back to HTTP+SSE), initialised with the session's worktree as the
// client's root, its tools listed within the start timeout. Messages reach the SDK in wire order.
import { pathToFileURL } from "node:url";
import type { WorkOrderMcpServer } from "@gadget/protocol";
import { spawnConfined } from "@gadget/sandbox";
import { commandEnvironment } from "@gadget/tools";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  isJSONRPCErrorResponse,
  isJSONRPCResultResponse,
  ListRootsRequestSchema,
  type Tool as McpTool,
  type Resource,
} from "@modelcontextprotocol/sdk/types.js";
import { failureCause, mayBeSseServer, serverGone, stderrSummary } from "./mcp-failures.ts";
import { startHint } from "./mcp-hints.ts";
import type { McpTurnRequest } from "./mcp-turn.ts";
import { ConfinedStdioTransport } from "./stdio-transport.ts";

/** A running server of a session. */
export interface Connection {
  name: string;
  fingerprint: string;
  client: Client;
  tools: McpTool[];
  /** The server's resources, listed the first time they are asked for. */
  resources: Promise<Resource[]> | null;
  closed: boolean;
  /** Records its end (once): warns the session's turns unless the drone stopped it. */
  noteClosed: () => void;
  /** Set when the drone stops it, so its end is no crash. */
  stopping: boolean;
  /** Started and listed: an end after this is a crash the turn hears of. */
  ready: boolean;
}

export interface ConnectOptions {
  /** The environment stdio servers start from (scrubbed of secrets before use). */
  env: Readonly<Record<string, string | undefined>>;
  startTimeoutMs: number;
  version: string;
  /** A started server ended on its own (it crashed): `message` says so in words. */
  onCrash: (message: string) => void;
}

/** A server that did not start, its message already the cause in words (bounded parts). */
export class StartFailure extends Error {}

/** Most tools or resources kept of one server (pages are followed up to this). */
export const maxListed = 1000;

/**
 * Starts (or reaches) `server`, initialises it and lists its tools; throws an Error whose message
 * is the cause in one line (with the meaningful end of a stdio server's stderr).
 */
export async function connectServer(
  server: WorkOrderMcpServer,
  request: McpTurnRequest,
  fingerprint: string,
  options: ConnectOptions,
): Promise<Connection> {
  let transport: Transport;
  let stdio: ConfinedStdioTransport | null = null;
  if (server.command) {
    const env = {
      ...commandEnvironment(options.env, { secretValues: request.secretValues }),
      GADGET_WORKTREE: request.workspace,
      // Without a network, npm cannot fetch: `npx -y` fails at once from its cache (ENOTCACHED)
      // instead of retrying a registry it cannot reach for a minute.
      ...(request.network === "none" ? { npm_config_offline: "true" } : {}),
      // The server's own variables, secrets included: they are what the project gives it.
      ...server.env,
    };
    const spawned = await spawnConfined(request.confinement, {
      argv: server.command,
      cwd: request.programDirectory,
      env,
    });
    stdio = new ConfinedStdioTransport(spawned);
    transport = stdio;
  } else {
    transport = remoteTransport(server, "streamable");
  }
  const newClient = () => {
    const client = new Client(
      { name: "gadget-drone", version: options.version },
      // The session's worktree is the client's one root: a server that works in its roots (the
      // filesystem server started without a directory) works there.
      { capabilities: { roots: { listChanged: false } } },
    );
    client.setRequestHandler(ListRootsRequestSchema, () => ({
      roots: [{ uri: pathToFileURL(request.workspace).href, name: "worktree" }],
    }));
    return client;
  };
  let client = newClient();
  const connection: Connection = {
    name: server.name,
    fingerprint,
    client,
    tools: [],
    resources: null,
    closed: false,
    noteClosed: () => {},
    stopping: false,
    ready: false,
  };
  connection.noteClosed = () => {
    if (connection.closed) return;
    connection.closed = true;
    if (connection.stopping || !connection.ready) return;
    const detail = stdio ? stderrSummary(stdio.stderr, request.secretValues) : "";
    options.onCrash(
      `MCP server "${server.name}" stopped${detail ? `: ${detail}` : ""}; it starts again when a tool of it is called or at the next turn`,
    );
  };
  const timeoutMs = options.startTimeoutMs;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no answer within ${Math.round(timeoutMs / 100) / 10} s`)),
      timeoutMs,
    );
  });
  try {
    await Promise.race([
      (async () => {
        try {
          await client.connect(inWireOrder(transport), { timeout: timeoutMs });
        } catch (error) {
          // A server from before Streamable HTTP refuses its POST: speak HTTP+SSE to it.
          if (!server.url || !mayBeSseServer(error)) throw error;
          await client.close().catch(() => {});
          client = newClient();
          connection.client = client;
          transport = remoteTransport(server, "sse");
          await client.connect(inWireOrder(transport), { timeout: timeoutMs }).catch((old) => {
            throw new Error(`${failureCause(error)}; over HTTP+SSE: ${failureCause(old)}`);
          });
        }
        client.onclose = connection.noteClosed;
        let cursor: string | undefined;
        do {
          const page = await client.listTools(cursor ? { cursor } : undefined, {
            timeout: timeoutMs,
          });
          connection.tools.push(...page.tools);
          cursor = page.nextCursor;
        } while (cursor && connection.tools.length < maxListed);
      })(),
      timeout,
    ]);
  } catch (error) {
    connection.stopping = true;
    await client.close().catch(() => {});
    await transport.close().catch(() => {});
    const stderr = stdio ? stderrSummary(stdio.stderr, request.secretValues) : "";
    // "Connection closed" says less than the stderr of a server that exited.
    const reason = stderr && serverGone(error) ? "it exited" : failureCause(error, server.url);
    const told = stderr ? `${reason} (stderr: ${stderr})` : reason;
    const hint = await startHint(server, request, `${told}\n${stdio?.stderr ?? ""}`);
    throw new StartFailure(hint ? `${told}. ${hint}` : told);
  } finally {
    clearTimeout(timer);
  }
  connection.ready = true;
  return connection;
}

/**
 * `transport` with each answer handed to the SDK a tick later, as the SDK hands notifications:
 * otherwise a tool's last progress notification, sent just before its answer, reaches its handler
 * after the call has ended and its progress handler is gone, and is lost.
 */
function inWireOrder(transport: Transport): Transport {
  const start = transport.start.bind(transport);
  transport.start = async () => {
    const deliver = transport.onmessage;
    if (deliver) {
      transport.onmessage = (message, extra) => {
        if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) {
          queueMicrotask(() => deliver(message, extra));
        } else deliver(message, extra);
      };
    }
    await start();
  };
  return transport;
}

/** A remote server's transport: Streamable HTTP, or HTTP+SSE for a server older than it. */
function remoteTransport(server: WorkOrderMcpServer, kind: "streamable" | "sse"): Transport {
  const url = new URL(server.url as string);
  const requestInit = server.bearerToken
    ? { headers: { authorization: `Bearer ${server.bearerToken}` } }
    : {};
  return kind === "sse"
    ? new SSEClientTransport(url, { requestInit })
    : new StreamableHTTPClientTransport(url, { requestInit });
}
