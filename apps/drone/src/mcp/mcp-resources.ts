// MCP resources: listed and read by the model through two read tools, and attached to a prompt
// that names one as `@<server>:<uri>` (as Claude Code's mentions do), read once at the turn's start.
import type { AnyTool, ToolContext, ToolResult } from "@gadget/agent";
import { OutputCapture, redactSecrets, resolveToolsOptions } from "@gadget/tools";
import type { ReadResourceResult, Resource } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

/** The session's servers that offer resources, as the tools and attachments reach them. */
export interface ResourceSource {
  /** Names of the servers (of this turn) that declared resources. */
  servers: readonly string[];
  list(server: string): Promise<Resource[]>;
  read(server: string, uri: string, signal?: AbortSignal): Promise<ReadResourceResult>;
}

/** The same budget as read_file's, per resource. */
const defaults = resolveToolsOptions();
const outputLimits = { maxBytes: defaults.maxReadBytes, maxLines: defaults.maxReadLines };
/** The tools' input schemas, made once (a warm turn builds the tools again). */
const listInput = z.object({ server: z.string().optional() });
const readInput = z.object({ server: z.string(), uri: z.string().min(1).max(2000) });

/** Resources named in one prompt that are attached; more stay as written. */
const maxAttached = 10;

function base64Bytes(data: string): number {
  return Math.floor((data.length * 3) / 4) - (data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0);
}

/** A read resource as text: text contents as they are, binary ones summarised; capped. */
export function resourceText(result: ReadResourceResult): string {
  const parts = result.contents.map((content) => {
    const kind = content.mimeType ? ` (${content.mimeType})` : "";
    if ("text" in content && typeof content.text === "string") return content.text;
    const blob = "blob" in content && typeof content.blob === "string" ? content.blob : "";
    return `[${content.uri}${kind}: ${base64Bytes(blob)} bytes of binary content]`;
  });
  const capture = new OutputCapture(outputLimits);
  capture.write(parts.join("\n"));
  return capture.render();
}

function listing(server: string, resources: readonly Resource[]): string {
  if (resources.length === 0) return `${server}: no resources`;
  return resources
    .map((resource) => {
      const kind = resource.mimeType ? ` (${resource.mimeType})` : "";
      const about = resource.description ? ` — ${resource.description.slice(0, 200)}` : "";
      return `@${server}:${resource.uri} ${resource.name}${kind}${about}`;
    })
    .join("\n");
}

/** The two read tools over `source`'s servers; none when no server offers resources. */
export function resourceTools(source: ResourceSource, secretValues: readonly string[]): AnyTool[] {
  if (source.servers.length === 0) return [];
  const names = source.servers.join(", ");
  const failed = (what: string, error: unknown): ToolResult => {
    const message = redactSecrets((error as Error).message ?? String(error), secretValues);
    return { ok: false, output: `${what} failed: ${message}`, summary: `${what} failed` };
  };
  const list: AnyTool = {
    name: "list_mcp_resources",
    description: `Lists the resources (documents, records) the MCP servers ${names} offer, as @server:uri lines.`,
    inputSchema: listInput,
    jsonSchema: {
      type: "object",
      properties: { server: { type: "string", enum: [...source.servers] } },
    },
    permission: "read",
    describe: (input: { server?: string }) => `mcp resources ${input.server ?? names}`,
    async execute(input: { server?: string }): Promise<ToolResult> {
      const servers = input.server ? [input.server] : source.servers;
      try {
        const lines = await Promise.all(
          servers.map(async (server) => listing(server, await source.list(server))),
        );
        const output = redactSecrets(lines.join("\n"), secretValues);
        return { ok: true, output, summary: `mcp resources of ${servers.join(", ")}` };
      } catch (error) {
        return failed("listing MCP resources", error);
      }
    },
  };
  const read: AnyTool = {
    name: "read_mcp_resource",
    description: `Reads one resource of the MCP servers ${names} by its URI (see list_mcp_resources).`,
    inputSchema: readInput,
    jsonSchema: {
      type: "object",
      properties: {
        server: { type: "string", enum: [...source.servers] },
        uri: { type: "string" },
      },
      required: ["server", "uri"],
    },
    permission: "read",
    describe: (input: { server: string; uri: string }) =>
      `mcp resource @${input.server}:${input.uri}`,
    async execute(input: { server: string; uri: string }, context: ToolContext) {
      try {
        const text = resourceText(await source.read(input.server, input.uri, context.signal));
        const output = redactSecrets(text, secretValues);
        return {
          ok: true,
          output,
          summary: `@${input.server}:${input.uri}: ${output.length} characters`,
        };
      } catch (error) {
        return failed(`reading @${input.server}:${input.uri}`, error);
      }
    },
  };
  return [list, read];
}

/**
 * `prompt` with each resource it names as `@server:uri` (a server of `source`) read and attached
 * after it. Unreadable ones are told through `onWarning` and left as written.
 * @example await attachResources("Summarise @docs:file:///guide.md", source, [], warn, note)
 */
export async function attachResources(
  prompt: string,
  source: ResourceSource,
  secretValues: readonly string[],
  onWarning: (message: string) => void,
  onAttached: (message: string) => void,
): Promise<string> {
  if (source.servers.length === 0) return prompt;
  const offered = new Set(source.servers);
  const mentions = new Map<string, { server: string; uri: string }>();
  for (const match of prompt.matchAll(/(?:^|\s)@([a-z0-9][a-z0-9_-]*):(\S+)/g)) {
    const [, server, written] = match as unknown as [string, string, string];
    // Punctuation that ends a sentence is not part of the URI.
    const uri = written.replace(/[.,;!?)]+$/, "");
    if (!offered.has(server) || mentions.size >= maxAttached) continue;
    mentions.set(`@${server}:${uri}`, { server, uri });
  }
  if (mentions.size === 0) return prompt;
  const attached: string[] = [];
  for (const [mention, { server, uri }] of mentions) {
    try {
      const text = redactSecrets(resourceText(await source.read(server, uri)), secretValues);
      attached.push(`Attached MCP resource ${mention}:\n${text}`);
      onAttached(`Attached MCP resource ${mention} (${text.length} characters)`);
    } catch (error) {
      const message = redactSecrets((error as Error).message ?? String(error), secretValues);
      onWarning(`MCP resource ${mention} could not be read, it is not attached: ${message}`);
    }
  }
  return attached.length ? `${prompt}\n\n${attached.join("\n\n")}` : prompt;
}
