// The project's MCP servers on this drone: started per session (stdio ones inside the turn's
// sandbox, in the session's worktree; remote ones over Streamable HTTP, or the old HTTP+SSE when
// that is refused), kept for the session's later turns, started again when one died or a remote
// one lost its session, stopped when the session has been idle a while and when the drone stops.
// A server that does not start or answer in time is left out of the turn.
import { createHash } from "node:crypto";
import type { AnyTool, EngineLogger, ToolContext } from "@gadget/agent";
import type { WorkOrderMcpServer } from "@gadget/protocol";
import { type CommandConfinement, spawnConfined } from "@gadget/sandbox";
import { commandEnvironment, redactSecrets } from "@gadget/tools";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { CallToolResult, Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import {
  failureCause,
  mayBeSseServer,
  serverGone,
  sessionGone,
  stderrSummary,
} from "./mcp-failures.ts";
import { mcpTool, progressLine } from "./mcp-tools.ts";
import { ConfinedStdioTransport } from "./stdio-transport.ts";
import { mcpToolName } from "./tool-names.ts";

export interface McpManagerOptions {
  logger: EngineLogger;
  /** The environment stdio servers start from (scrubbed of secrets before use). */
  env: Readonly<Record<string, string | undefined>>;
  /** A session's servers stop after this long without a turn; default 10 minutes. */
  idleMs?: number;
  /** Longest a server may take to start and list its tools; default 10 s. */
  startTimeoutMs?: number;
  /** The drone's version, told to servers as the client's. */
  version?: string;
}

/** What one turn asks of the manager. */
export interface McpTurnRequest {
  /** The session whose servers these are (its turns share them). */
  session: string;
  servers: readonly WorkOrderMcpServer[];
  /** The turn's sandbox: stdio servers start inside it. */
  confinement: CommandConfinement;
  /** The session's worktree: stdio servers see it read-write, at its path (`GADGET_WORKTREE`). */
  workspace: string;
  /**
   * Where stdio servers start: the project's default-branch checkout, shown read-only. A server's
   * program never comes from the session's worktree, which the agent writes: a rewritten server
   * would run with the server's secrets.
   */
  programDirectory: string;
  /** What else makes a running server unfit for this turn (the project's network policy). */
  policy: string;
  /** Values never to appear in a tool's output, a status message or a log line. */
  secretValues: readonly string[];
  /** A server failed (did not start, timed out, crashed): said to the turn as a warning. */
  onWarning: (message: string) => void;
}

/** A turn's hold on its session's servers: their tools, until released. */
export interface McpLease {
  tools: AnyTool[];
  /** The session's servers by name (their prompts are `/mcp__<server>__<prompt>` commands). */
  servers: ReadonlyMap<string, { readonly client: Client; readonly closed: boolean }>;
  release(): void;
}

/** A running server of a session. */
interface Connection {
  name: string;
  fingerprint: string;
  client: Client;
  tools: McpTool[];
  closed: boolean;
  /** Records its end (once): warns the session's turns unless the drone stopped it. */
  noteClosed: () => void;
  /** Set when the drone stops it, so its end is no crash. */
  stopping: boolean;
  /** Started and listed: an end after this is a crash the turn hears of. */
  ready: boolean;
}

interface SessionServers {
  connections: Map<string, Connection>;
  leases: Set<McpTurnRequest>;
  lastUsed: number;
}

/** Longest one tool call may take on the server's side; the turn's own tool timeout comes first. */
const callTimeoutMs = 600_000;

function fingerprintOf(server: WorkOrderMcpServer, request: McpTurnRequest): string {
  return createHash("sha256")
    .update(JSON.stringify([server, request.workspace, request.policy]))
    .digest("hex");
}

export class McpManager {
  private readonly sessions = new Map<string, SessionServers>();
  private sweeper: NodeJS.Timeout | undefined;
  private readonly idleMs: number;
  private readonly startTimeoutMs: number;

  constructor(private readonly options: McpManagerOptions) {
    this.idleMs = options.idleMs ?? 600_000;
    this.startTimeoutMs = options.startTimeoutMs ?? 10_000;
  }

  /** Starts looking for idle sessions now and then. */
  start(): void {
    const period = Math.max(1000, Math.min(this.idleMs / 4, 30_000));
    this.sweeper = setInterval(() => void this.stopIdle(), period);
    this.sweeper.unref();
  }

  /**
   * The tools of the session's servers for one turn: running ones reused, missing, changed or dead
   * ones started. Never throws: a failing server is a warning and its tools are left out.
   */
  async open(request: McpTurnRequest): Promise<McpLease> {
    let session = this.sessions.get(request.session);
    if (!session) {
      session = { connections: new Map(), leases: new Set(), lastUsed: Date.now() };
      this.sessions.set(request.session, session);
    }
    session.leases.add(request);
    session.lastUsed = Date.now();
    const wanted = new Set(request.servers.map((server) => server.name));
    for (const [name, connection] of session.connections) {
      if (!wanted.has(name)) {
        session.connections.delete(name);
        void this.stop(connection);
      }
    }
    const connections = await Promise.all(
      request.servers.map((server) => this.ensure(session, server, request)),
    );
    const taken = new Set<string>();
    const tools: AnyTool[] = [];
    request.servers.forEach((server, index) => {
      const connection = connections[index];
      if (!connection) return;
      const allowed = server.tools ? new Set(server.tools) : null;
      for (const tool of connection.tools) {
        if (allowed && !allowed.has(tool.name)) continue;
        // Task-only tools refuse a plain call; the drone does not run MCP tasks, so never offers them.
        if (tool.execution?.taskSupport === "required") continue;
        const call = (name: string, args: Record<string, unknown>, context: ToolContext) =>
          this.call(session, server, request, name, args, context);
        tools.push(
          mcpTool(
            server.name,
            tool,
            mcpToolName(server.name, tool.name, taken),
            call,
            request.secretValues,
          ),
        );
      }
    });
    let released = false;
    return {
      tools,
      servers: session.connections,
      release: () => {
        if (released) return;
        released = true;
        session.leases.delete(request);
        session.lastUsed = Date.now();
      },
    };
  }

  /** Stops the servers of sessions without a turn for longer than the idle time. */
  async stopIdle(now = Date.now()): Promise<void> {
    const stopping: Promise<void>[] = [];
    for (const [key, session] of this.sessions) {
      if (session.leases.size > 0 || now - session.lastUsed < this.idleMs) continue;
      this.sessions.delete(key);
      for (const connection of session.connections.values()) stopping.push(this.stop(connection));
      if (session.connections.size > 0) {
        this.options.logger.info(
          { session: key, servers: [...session.connections.keys()] },
          "stopped the idle session's MCP servers",
        );
      }
    }
    await Promise.all(stopping);
  }

  /** Stops every server (the drone is stopping). */
  async close(): Promise<void> {
    clearInterval(this.sweeper);
    const sessions = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.all(
      sessions.flatMap((session) =>
        [...session.connections.values()].map((connection) => this.stop(connection)),
      ),
    );
  }

  /** How many servers run now (for tests and the status display). */
  get running(): number {
    let count = 0;
    for (const session of this.sessions.values()) {
      for (const connection of session.connections.values()) if (!connection.closed) count++;
    }
    return count;
  }

  private async ensure(
    session: SessionServers,
    server: WorkOrderMcpServer,
    request: McpTurnRequest,
  ): Promise<Connection | null> {
    const fingerprint = fingerprintOf(server, request);
    const existing = session.connections.get(server.name);
    if (existing && !existing.closed && existing.fingerprint === fingerprint) return existing;
    if (existing) {
      session.connections.delete(server.name);
      await this.stop(existing);
    }
    try {
      const connection = await this.connect(server, request, fingerprint, session);
      session.connections.set(server.name, connection);
      return connection;
    } catch (error) {
      const reason = redactSecrets(failureCause(error, server.url), request.secretValues);
      this.options.logger.warn({ server: server.name, reason }, "MCP server unavailable");
      request.onWarning(
        `MCP server "${server.name}" is unavailable, the turn goes on without its tools: ${reason}`,
      );
      return null;
    }
  }

  private async connect(
    server: WorkOrderMcpServer,
    request: McpTurnRequest,
    fingerprint: string,
    session: SessionServers,
  ): Promise<Connection> {
    let transport: Transport;
    let stdio: ConfinedStdioTransport | null = null;
    if (server.command) {
      const env = {
        ...commandEnvironment(this.options.env, { secretValues: request.secretValues }),
        GADGET_WORKTREE: request.workspace,
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
    const newClient = () =>
      new Client({ name: "gadget-drone", version: this.options.version ?? "0" });
    let client = newClient();
    const connection: Connection = {
      name: server.name,
      fingerprint,
      client,
      tools: [],
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
      const message = `MCP server "${server.name}" stopped${detail ? `: ${detail}` : ""}; it starts again when a tool of it is called or at the next turn`;
      this.options.logger.warn({ server: server.name }, message);
      for (const lease of session.leases) lease.onWarning(message);
    };
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no answer within ${Math.round(this.startTimeoutMs / 100) / 10} s`)),
        this.startTimeoutMs,
      );
    });
    try {
      await Promise.race([
        (async () => {
          try {
            await client.connect(transport, { timeout: this.startTimeoutMs });
          } catch (error) {
            // A server from before Streamable HTTP refuses its POST: speak HTTP+SSE to it.
            if (!server.url || !mayBeSseServer(error)) throw error;
            await client.close().catch(() => {});
            client = newClient();
            connection.client = client;
            transport = remoteTransport(server, "sse");
            await client.connect(transport, { timeout: this.startTimeoutMs }).catch((old) => {
              throw new Error(`${failureCause(error)}; over HTTP+SSE: ${failureCause(old)}`);
            });
          }
          client.onclose = connection.noteClosed;
          let cursor: string | undefined;
          do {
            const page = await client.listTools(cursor ? { cursor } : undefined, {
              timeout: this.startTimeoutMs,
            });
            connection.tools.push(...page.tools);
            cursor = page.nextCursor;
          } while (cursor && connection.tools.length < 1000);
        })(),
        timeout,
      ]);
    } catch (error) {
      connection.stopping = true;
      await client.close().catch(() => {});
      await transport.close().catch(() => {});
      const stderr = stdio ? stderrSummary(stdio.stderr, request.secretValues) : "";
      const reason = failureCause(error, server.url);
      throw new Error(stderr ? `${reason} (stderr: ${stderr})` : reason);
    } finally {
      clearTimeout(timer);
    }
    connection.ready = true;
    return connection;
  }

  private async call(
    session: SessionServers,
    server: WorkOrderMcpServer,
    request: McpTurnRequest,
    tool: string,
    args: Record<string, unknown>,
    context: ToolContext,
  ): Promise<CallToolResult> {
    let connection = session.connections.get(server.name);
    if (!connection || connection.closed) {
      // A server that died is started again for the call that needs it.
      connection = (await this.ensure(session, server, request)) ?? undefined;
      if (!connection) throw new Error("the server is not running and did not start again");
    }
    session.lastUsed = Date.now();
    const callOn = async (target: Connection) =>
      (await target.client.callTool({ name: tool, arguments: args }, undefined, {
        signal: context.signal,
        timeout: callTimeoutMs,
        resetTimeoutOnProgress: true,
        // Asks the server for progress and shows it in the tool's row while it runs.
        onprogress: (progress) =>
          context.onOutput?.({
            stream: "stdout",
            text: redactSecrets(progressLine(progress), request.secretValues),
          }),
      })) as CallToolResult;
    try {
      return await callOn(connection);
    } catch (error) {
      // The server died just before the call, its exit not yet seen when the call was sent (a
      // tool that ends its server, then the next call at once): start it again, once. Which way
      // that shows depends on timing: the connection closed under the call, or the write to a
      // pipe whose reader is gone failed. A remote server that restarted has forgotten the
      // session: a new one, once.
      const gone = serverGone(error);
      if (!gone && !(server.url && sessionGone(error)))
        throw new Error(failureCause(error, server.url));
      if (gone) connection.noteClosed();
      else {
        session.connections.delete(server.name);
        await this.stop(connection);
      }
      const again = await this.ensure(session, server, request);
      if (!again) throw new Error(failureCause(error, server.url));
      return await callOn(again);
    }
  }

  private async stop(connection: Connection): Promise<void> {
    connection.stopping = true;
    await connection.client.close().catch(() => {});
  }
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
