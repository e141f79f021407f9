// Before the engine starts: a prompt `/<name> args` becomes the command's text — the file
// `.gadget/commands/<name>.md` as committed at the turn's starting commit, or an MCP server's prompt
// — and a `command` event shows what it became. A name that is no command ends the turn before any
// model call, saying which commands there are. The MCP prompts seen are remembered for the composer.
import { agentEvent, UserError } from "@gadget/protocol";
import { findSkills, type SkillSummary } from "@gadget/tools";
import type { McpLease } from "../mcp/mcp-manager.ts";
import { commandCall, literalPrompt, withArguments } from "../prompt-commands/expansion.ts";
import { MAX_COMMAND_BYTES, readFileCommands } from "../prompt-commands/file-commands.ts";
import {
  fetchMcpPrompt,
  listMcpPrompts,
  type McpPromptCommand,
} from "../prompt-commands/mcp-prompts.ts";
import { rememberMcpPrompts } from "../prompt-commands/project-commands.ts";
import type { TurnScope } from "./scope.ts";

export interface CommandSettings {
  workspaceRoot: string;
  /** Kept out of an MCP prompt's text (the servers' own secrets among them). */
  secretValues: readonly string[];
}

/**
 * What the engine is asked and may read: the prompt with its `/command` expanded and the MCP
 * resources it names as `@server:uri` attached, and the worktree's skills as the turn starts.
 * @example const { goal, skills } = await preparePrompt(scope, settings, directory, lease);
 */
export async function preparePrompt(
  scope: TurnScope,
  settings: CommandSettings,
  directory: string,
  lease: McpLease | null,
): Promise<{ goal: string; skills: SkillSummary[] }> {
  const expanded = await expandPromptCommand(scope, settings, directory, lease);
  const goal = lease ? await lease.attachResources(expanded) : expanded;
  return { goal, skills: await findSkills(directory) };
}

/**
 * The prompt the engine gets for the turn: the order's prompt, or the command it calls expanded
 * (UserError `unknown_command` / `command_failed` when it cannot be). A resumed turn keeps the
 * prompt its first run expanded (it is in its messages), so it is not expanded again.
 * @example const goal = await expandPromptCommand(scope, settings, worktree.directory, lease);
 */
export async function expandPromptCommand(
  { order, emit, logger }: TurnScope,
  settings: CommandSettings,
  directory: string,
  lease: McpLease | null,
): Promise<string> {
  const servers = [...(lease?.servers ?? [])]
    .filter(([, connection]) => !connection.closed)
    .map(([name, connection]) => ({ name, client: connection.client }));
  // Listed every turn (for the composer), waited for only when the prompt needs them.
  const prompts = listMcpPrompts(servers).then(async (listed) => {
    await rememberMcpPrompts(
      settings.workspaceRoot,
      order.project.slug,
      listed.map((prompt) => prompt.command),
    ).catch((error) => logger.warn({ err: error }, "could not remember the MCP prompts"));
    return listed;
  });
  const call = commandCall(order.prompt);
  if (!call || order.resume) {
    void prompts;
    return order.resume ? order.prompt : literalPrompt(order.prompt);
  }
  const files = await readFileCommands(directory, "HEAD");
  const file = files.find((command) => command.name === call.name);
  if (file) {
    if (file.body === null)
      throw new UserError(
        "command_failed",
        `The command /${call.name} cannot be used: ${file.path} is over ${MAX_COMMAND_BYTES / 1024} KiB`,
      );
    const prompt = withArguments(file.body, call.arguments);
    emit(
      agentEvent("command", {
        name: call.name,
        source: "file",
        origin: file.path,
        arguments: call.arguments,
        prompt,
      }),
    );
    return prompt;
  }
  const listed = await prompts;
  const found = listed.find((prompt) => prompt.command.name === call.name);
  if (!found) throw unknownCommand(call.name, files, listed);
  const server = servers.find((candidate) => candidate.name === found.server);
  let prompt: string;
  try {
    if (!server) throw new Error("the server is not running");
    prompt = await fetchMcpPrompt(
      server.client,
      found.prompt,
      call.arguments,
      settings.secretValues,
    );
  } catch (error) {
    throw new UserError(
      "command_failed",
      `The command /${call.name} (prompt "${found.prompt.name}" of MCP server "${found.server}") failed: ${(error as Error).message}`,
    );
  }
  emit(
    agentEvent("command", {
      name: call.name,
      source: "mcp",
      origin: found.server,
      arguments: call.arguments,
      prompt,
    }),
  );
  return prompt;
}

function unknownCommand(
  name: string,
  files: ReadonlyArray<{ name: string }>,
  prompts: readonly McpPromptCommand[],
): UserError {
  const known = [...files.map((file) => file.name), ...prompts.map((p) => p.command.name)];
  const listed = known.length
    ? `the project's commands are ${known
        .slice(0, 20)
        .map((known) => `/${known}`)
        .join(", ")}${known.length > 20 ? ", …" : ""}`
    : "the project has none (.gadget/commands/<name>.md, or an MCP server's prompts)";
  return new UserError(
    "unknown_command",
    `Unknown command /${name}: ${listed}. To send a prompt starting with "/" as text, start it with "//".`,
  );
}
