// What a turn asks of the session's MCP servers, and the hold it gets on them: shared by the
// manager and the connections it makes.
import type { AnyTool } from "@gadget/agent";
import type { NetworkMode, WorkOrderMcpServer } from "@gadget/protocol";
import type { CommandConfinement } from "@gadget/sandbox";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";

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
  /** The project's network mode, to explain a server that could not download (default `none`). */
  network?: NetworkMode;
  /** Values never to appear in a tool's output, a status message or a log line. */
  secretValues: readonly string[];
  /** A server failed (did not start, timed out, crashed): said to the turn as a warning. */
  onWarning: (message: string) => void;
  /** Something the turn should show that is no failure (a resource attached to the prompt). */
  onStatus?: (message: string) => void;
}

/** A turn's hold on its session's servers: their tools, until released. */
export interface McpLease {
  tools: AnyTool[];
  /**
   * The prompt with the resources it names as `@server:uri` attached after it (each read once,
   * capped); a mention that cannot be read is a warning and stays as it was written.
   */
  attachResources(prompt: string): Promise<string>;
  /** The session's servers by name (their prompts are `/mcp__<server>__<prompt>` commands). */
  servers: ReadonlyMap<string, { readonly client: Client; readonly closed: boolean }>;
  release(): void;
}
