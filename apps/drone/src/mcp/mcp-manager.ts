// The project's MCP servers on this drone: started per session (see mcp-connection.ts), kept for
// the session's later turns, started again when one died or a remote one lost its session, not
// waited for again while a failed one is backed off, stopped when the session has been idle a
// while and when the drone stops. A server that does not start or answer in time is left out.
import { createHash } from "node:crypto";
import type { AnyTool, EngineLogger, ToolContext } from "@gadget/agent";
import type { WorkOrderMcpServer } from "@gadget/protocol";
import { redactSecrets } from "@gadget/tools";
import type { CallToolResult, Resource } from "@modelcontextprotocol/sdk/types.js";
import { FailedServers } from "./mcp-backoff.ts";
import { type Connection, connectServer, maxListed, StartFailure } from "./mcp-connection.ts";
import { failureCause, serverGone, sessionGone } from "./mcp-failures.ts";
import { attachResources, type ResourceSource, resourceTools } from "./mcp-resources.ts";
import { mcpTool, progressLine } from "./mcp-tools.ts";
import type { McpLease, McpTurnRequest } from "./mcp-turn.ts";
import { mcpToolName } from "./tool-names.ts";

export type { McpLease, McpTurnRequest } from "./mcp-turn.ts";

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

interface SessionServers {
  connections: Map<string, Connection>;
  leases: Set<McpTurnRequest>;
  lastUsed: number;
  /** Servers that failed to start, not waited for again until their back-off passed. */
  failed: FailedServers;
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
      session = {
        connections: new Map(),
        leases: new Set(),
        lastUsed: Date.now(),
        failed: new FailedServers(),
      };
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
    const resources = this.resourceSource(session, request, connections);
    tools.push(...resourceTools(resources, request.secretValues));
    let released = false;
    return {
      tools,
      attachResources: (prompt) =>
        attachResources(prompt, resources, request.secretValues, request.onWarning, (message) =>
          request.onStatus?.(message),
        ),
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

  /** The session's live connection to `server`, started again if it died; null if it cannot be. */
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
    const unavailable = (reason: string) =>
      `MCP server "${server.name}" is unavailable, the turn goes on without its tools: ${reason}`;
    const backedOff = session.failed.backedOff(server.name, fingerprint);
    if (backedOff) {
      request.onWarning(
        `${unavailable(backedOff.reason)} (not tried again for ${backedOff.retryInSeconds} s, or until its settings change)`,
      );
      return null;
    }
    try {
      const connection = await connectServer(server, request, fingerprint, {
        env: this.options.env,
        startTimeoutMs: this.startTimeoutMs,
        version: this.options.version ?? "0",
        onCrash: (message) => {
          this.options.logger.warn({ server: server.name }, message);
          for (const lease of session.leases) lease.onWarning(message);
        },
      });
      session.connections.set(server.name, connection);
      session.failed.started(server.name);
      return connection;
    } catch (error) {
      const cause = error instanceof StartFailure ? error.message : failureCause(error, server.url);
      const reason = redactSecrets(cause, request.secretValues);
      session.failed.failed(server.name, fingerprint, reason);
      this.options.logger.warn({ server: server.name, reason }, "MCP server unavailable");
      request.onWarning(unavailable(reason));
      return null;
    }
  }

  private async call(
    session: SessionServers,
    server: WorkOrderMcpServer,
    request: McpTurnRequest,
    tool: string,
    args: Record<string, unknown>,
    context: ToolContext,
  ): Promise<CallToolResult> {
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
    return this.onServer(session, server, request, callOn);
  }

  /**
   * Runs `use` on the session's connection to `server`, started again first if it died. A server
   * that died just before the call, its exit not yet seen when the call was sent (a tool that ends
   * its server, then the next call at once), is started again once: the connection closed under
   * the call, or the write to a pipe whose reader is gone failed (EPIPE). A remote server that
   * restarted has forgotten the session: a new one, once.
   */
  private async onServer<Result>(
    session: SessionServers,
    server: WorkOrderMcpServer,
    request: McpTurnRequest,
    use: (connection: Connection) => Promise<Result>,
  ): Promise<Result> {
    session.lastUsed = Date.now();
    let connection = session.connections.get(server.name);
    if (!connection || connection.closed) {
      connection = (await this.ensure(session, server, request)) ?? undefined;
      if (!connection) throw new Error("the server is not running and did not start again");
    }
    try {
      return await use(connection);
    } catch (error) {
      const gone = serverGone(error) || connection.closed;
      if (!gone && !(server.url && sessionGone(error)))
        throw new Error(failureCause(error, server.url));
      if (gone) connection.noteClosed();
      // A stdio server that closed its input may still run: ended before its successor starts.
      if (session.connections.get(server.name) === connection)
        session.connections.delete(server.name);
      await this.stop(connection);
      const again = await this.ensure(session, server, request);
      if (!again) throw new Error(failureCause(error, server.url));
      return await use(again);
    }
  }

  /** The turn's servers that offer resources, listed and read on their live connections. */
  private resourceSource(
    session: SessionServers,
    request: McpTurnRequest,
    connections: readonly (Connection | null)[],
  ): ResourceSource {
    const byName = new Map(request.servers.map((server) => [server.name, server]));
    const servers = request.servers
      .filter((_, index) => connections[index]?.client.getServerCapabilities()?.resources)
      .map((server) => server.name);
    const serverOf = (name: string) => {
      const server = servers.includes(name) ? byName.get(name) : undefined;
      if (!server) throw new Error(`no MCP server "${name}" offers resources in this turn`);
      return server;
    };
    const options = { timeout: this.startTimeoutMs };
    return {
      servers,
      list: (name) =>
        this.onServer(session, serverOf(name), request, (connection) => {
          connection.resources ??= (async () => {
            const listed: Resource[] = [];
            let cursor: string | undefined;
            do {
              const page = await connection.client.listResources(
                cursor ? { cursor } : undefined,
                options,
              );
              listed.push(...page.resources);
              cursor = page.nextCursor;
            } while (cursor && listed.length < maxListed);
            return listed;
          })().catch((error) => {
            connection.resources = null;
            throw error;
          });
          return connection.resources;
        }),
      read: (name, uri, signal) =>
        this.onServer(session, serverOf(name), request, (connection) =>
          connection.client.readResource({ uri }, { ...options, ...(signal ? { signal } : {}) }),
        ),
    };
  }

  private async stop(connection: Connection): Promise<void> {
    connection.stopping = true;
    await connection.client.close().catch(() => {});
  }
}
