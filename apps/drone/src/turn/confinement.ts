// What a turn's commands may touch: the sandbox policy of its worktree, the secrets kept out of
// every command's environment and output, and the session's MCP servers started inside it.
import { realpath } from "node:fs/promises";
import type { IWorkOrder } from "@gadget/protocol";
import { agentEvent } from "@gadget/protocol";
import {
  type CommandConfinement,
  type ConfinementPolicy,
  confine,
  type Sandbox,
} from "@gadget/sandbox";
import type { McpLease, McpManager } from "../mcp/mcp-manager.ts";
import { projectHome } from "../sandbox.ts";
import { projectDirectory } from "../workspace/prepare.ts";
import { type TurnScope, turnSessionId } from "./scope.ts";

export interface ConfinementSettings {
  workspaceRoot: string;
  /** Confines every command the turn runs (the agent's and verification's). */
  sandbox: Sandbox;
  /** Directories no command may see (the drone's config, workspaces, journal). */
  hiddenPaths: readonly string[];
}

/** The turn's commands confined to its worktree, and the session's MCP servers opened in it. */
export interface ConfinedTurn {
  policy: ConfinementPolicy;
  confinement: CommandConfinement;
  /** The session's MCP servers; null when the project has none or the drone runs no MCP. */
  mcp: McpLease | null;
}

/** Confines the turn's commands to `directory`, then opens the session's MCP servers in it. */
export async function confineWorktree(
  scope: TurnScope,
  settings: ConfinementSettings & { mcp?: McpManager | undefined },
  directory: string,
  secretValues: string[],
): Promise<ConfinedTurn> {
  const policy = await confineTurn(scope, settings, directory);
  const confinement = confine(settings.sandbox, policy);
  const mcp = await openMcpServers(scope, settings, directory, policy, secretValues);
  return { policy, confinement, mcp };
}

/** The turn's sandbox policy: its worktree, its project's HOME and network, nothing of the drone. */
export async function confineTurn(
  { order, emit }: TurnScope,
  settings: ConfinementSettings,
  directory: string,
): Promise<ConfinementPolicy> {
  const network = order.project.network;
  if (settings.sandbox.info.kind === "none") {
    emit(
      agentEvent("status", {
        phase: "sandbox",
        level: "warning",
        message: `This drone runs commands without a sandbox (it was started with --no-sandbox): they run as the drone's user, with its files and network${network.mode === "open" ? "" : `, so the project's network setting ("${network.mode}") is not enforced`}.`,
      }),
    );
  }
  return {
    workspace: await realpath(directory),
    home: projectHome({ workspace: settings.workspaceRoot }, order.project.slug),
    network,
    hidden: [settings.workspaceRoot, ...settings.hiddenPaths],
  };
}

/**
 * The session's MCP servers, started or reused: stdio ones inside the sandbox, in the project's
 * default-branch checkout (shown read-only), never from the worktree the agent writes.
 */
export async function openMcpServers(
  { order, emit }: TurnScope,
  settings: { mcp?: McpManager | undefined; sandbox: Sandbox; workspaceRoot: string },
  directory: string,
  policy: ConfinementPolicy,
  secretValues: string[],
): Promise<McpLease | null> {
  const mcp = settings.mcp;
  const servers = order.project.mcpServers;
  if (!mcp || servers.length === 0) return null;
  emit(
    agentEvent("status", {
      phase: "mcp",
      message: `Connecting to MCP servers: ${servers.map((server) => server.name).join(", ")}`,
    }),
  );
  const programDirectory = await realpath(
    projectDirectory(settings.workspaceRoot, order.project.slug),
  );
  return mcp.open({
    session: `${order.project._id}:${turnSessionId(order)}`,
    servers,
    confinement: confine(settings.sandbox, { ...policy, readOnly: [programDirectory] }),
    programDirectory,
    workspace: await realpath(directory),
    policy: JSON.stringify(order.project.network),
    network: order.project.network.mode,
    secretValues,
    onWarning: (message) => emit(agentEvent("status", { phase: "mcp", level: "warning", message })),
    onStatus: (message) => emit(agentEvent("status", { phase: "mcp", message })),
  });
}

/** Values never to reach a command's environment or output: the drone's own and the order's. */
export function turnSecrets(order: IWorkOrder, droneSecrets: readonly string[]): string[] {
  return [
    ...droneSecrets,
    order.provider.apiKey,
    // Never given to a command; kept out of any output all the same.
    order.project.forge?.token ?? "",
    // The project's own variables: its commands get them, its events never show those long
    // enough to be a credential (cutting "test" or "true" from every output would garble it).
    ...Object.values(order.project.env).filter((value) => value.length >= 8),
    // Given to the MCP servers that need them, and to nothing else.
    ...order.project.mcpServers.flatMap((server) => [
      ...Object.values(server.env),
      server.bearerToken ?? "",
    ]),
  ].filter((value) => value.length >= 4);
}
