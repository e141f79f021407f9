// An MCP server's prompts as commands, `/mcp__<server>__<prompt> args`: listed over the session's
// running connection, and one fetched with the words after its name as its arguments.
import type { ProjectCommand } from "@gadget/protocol";
import { redactSecrets } from "@gadget/tools";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CallToolResult, Prompt } from "@modelcontextprotocol/sdk/types.js";
import { resultText } from "../mcp/mcp-tools.ts";
import { mcpToolName } from "../mcp/tool-names.ts";

/** Longest a server may take to list or give its prompts. */
const promptTimeoutMs = 10_000;
/** Most prompts taken from one server. */
const maxPrompts = 100;

/** A prompt of a running server, by the command name it goes by. */
export interface McpPromptCommand {
  command: ProjectCommand;
  server: string;
  prompt: Prompt;
}

/** A server of the session, as the MCP manager's lease shows it. */
export interface PromptServer {
  name: string;
  client: Client;
}

/**
 * The prompts of `servers` that offer any, named `mcp__<server>__<prompt>` (made safe as tool
 * names are). A server that fails to list them is left out.
 * @example const prompts = await listMcpPrompts([{ name: "tracker", client }]);
 */
export async function listMcpPrompts(
  servers: readonly PromptServer[],
): Promise<McpPromptCommand[]> {
  const taken = new Set<string>();
  const lists = await Promise.all(
    servers.map(async (server) => {
      if (!server.client.getServerCapabilities()?.prompts) return [];
      const prompts: Prompt[] = [];
      let cursor: string | undefined;
      try {
        do {
          const page = await server.client.listPrompts(cursor ? { cursor } : undefined, {
            timeout: promptTimeoutMs,
          });
          prompts.push(...page.prompts);
          cursor = page.nextCursor;
        } while (cursor && prompts.length < maxPrompts);
      } catch {
        return [];
      }
      return prompts.slice(0, maxPrompts).map((prompt) => ({ server: server.name, prompt }));
    }),
  );
  return lists.flat().map(({ server, prompt }) => {
    const hint = (prompt.arguments ?? [])
      .map((argument) => (argument.required ? `<${argument.name}>` : `[${argument.name}]`))
      .join(" ");
    return {
      server,
      prompt,
      command: {
        name: mcpToolName(server, prompt.name, taken),
        description: oneLine(
          prompt.description ?? prompt.title ?? `prompt of MCP server ${server}`,
        ),
        source: "mcp",
        server,
        ...(hint ? { argumentHint: hint.slice(0, 200) } : {}),
      },
    };
  });
}

/**
 * The words after a command's name given to the prompt's arguments in order, the last taking the
 * rest; a "quoted phrase" is one word. Throws naming a required argument left without a value.
 */
export function promptArguments(prompt: Prompt, text: string): Record<string, string> {
  const names = (prompt.arguments ?? []).map((argument) => argument.name);
  const words = [...text.matchAll(/"([^"]*)"|(\S+)/g)].map((match) => match[1] ?? match[2] ?? "");
  const values: Record<string, string> = {};
  names.forEach((name, index) => {
    if (index >= words.length) return;
    values[name] =
      index === names.length - 1 ? restFrom(text, words.length - index) : (words[index] as string);
  });
  const missing = (prompt.arguments ?? []).filter(
    (argument) => argument.required && !values[argument.name],
  );
  if (missing.length > 0)
    throw new Error(`it needs ${missing.map((argument) => `<${argument.name}>`).join(" ")}`);
  return values;
}

/** The last `count` words of `text` as written (quotes of a single quoted word removed). */
function restFrom(text: string, count: number): string {
  const matches = [...text.matchAll(/"([^"]*)"|(\S+)/g)];
  const first = matches[matches.length - count];
  if (!first) return "";
  if (count === 1) return first[1] ?? first[2] ?? "";
  return text.slice(first.index).trim();
}

/**
 * The prompt's messages as one text for the turn (text as it is, media and resources summarised,
 * capped like a tool's answer), the server's secrets removed.
 */
export async function fetchMcpPrompt(
  client: Client,
  prompt: Prompt,
  argumentsText: string,
  secretValues: readonly string[],
): Promise<string> {
  const values = promptArguments(prompt, argumentsText);
  const result = await client.getPrompt(
    { name: prompt.name, arguments: values },
    { timeout: promptTimeoutMs },
  );
  const content = result.messages.map((message) => message.content) as CallToolResult["content"];
  return redactSecrets(resultText({ content }).text, secretValues);
}

function oneLine(text: string): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}
