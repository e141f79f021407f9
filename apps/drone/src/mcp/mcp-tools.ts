// An MCP server's tool as one of the agent's tools: its name made safe, its JSON schema as the
// model sees it, permission from `readOnlyHint`, and its result turned into text within the caps.
import type { AnyTool, ToolContext, ToolResult } from "@gadget/agent";
import { OutputCapture, redactSecrets, resolveToolsOptions } from "@gadget/tools";
import type { CallToolResult, Tool as McpTool, Progress } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { readOnlyHint } from "./mcp-hints.ts";

/** Calls one tool on its server (the session's live connection). */
export type McpCall = (
  tool: string,
  args: Record<string, unknown>,
  context: ToolContext,
) => Promise<CallToolResult>;

/** The same budget as read_file's: an MCP answer is read like a file. */
const defaults = resolveToolsOptions();
const outputLimits = { maxBytes: defaults.maxReadBytes, maxLines: defaults.maxReadLines };

type Content = CallToolResult["content"][number];

function base64Bytes(data: string): number {
  return Math.floor((data.length * 3) / 4) - (data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0);
}

/** One content item as text: text as it is, media and resources summarised. */
function contentText(item: Content): string {
  switch (item.type) {
    case "text":
      return item.text;
    case "image":
      return `[image: ${item.mimeType}, ${base64Bytes(item.data)} bytes]`;
    case "audio":
      return `[audio: ${item.mimeType}, ${base64Bytes(item.data)} bytes]`;
    case "resource": {
      const resource = item.resource;
      const kind = resource.mimeType ? `, ${resource.mimeType}` : "";
      if ("text" in resource && typeof resource.text === "string") {
        return `[resource ${resource.uri}${kind}]\n${resource.text}`;
      }
      const blob = "blob" in resource && typeof resource.blob === "string" ? resource.blob : "";
      return `[resource ${resource.uri}${kind}, ${base64Bytes(blob)} bytes]`;
    }
    case "resource_link":
      return `[resource link ${item.uri}${item.name ? ` (${item.name})` : ""}]`;
    default:
      return `[${(item as { type: string }).type} content]`;
  }
}

/** A tool result's text as the model reads it: the content joined, capped like a file's. */
export function resultText(result: CallToolResult): { text: string; truncated: boolean } {
  const parts = (result.content ?? []).map(contentText);
  if (parts.length === 0 && result.structuredContent !== undefined) {
    parts.push(JSON.stringify(result.structuredContent));
  }
  const capture = new OutputCapture(outputLimits);
  capture.write(parts.join("\n"));
  return { text: capture.render(), truncated: capture.truncated };
}

/** A server's progress notification as a line of the tool's live output: `progress 2/5: step`. */
export function progressLine(progress: Progress): string {
  const amount = progress.total ? `${progress.progress}/${progress.total}` : `${progress.progress}`;
  const message = progress.message
    ? `: ${progress.message.replace(/\s+/g, " ").slice(0, 200)}`
    : "";
  return `progress ${amount}${message}\n`;
}

function firstLine(text: string): string {
  const line = text.split("\n").find((candidate) => candidate.trim()) ?? "";
  return line.length > 120 ? `${line.slice(0, 117)}…` : line;
}

/**
 * The agent's tool for `tool` on `server`, offered as `name`.
 * @example mcpTool("github", listed.tools[0], "mcp__github__create_issue", call, [token])
 */
export function mcpTool(
  server: string,
  tool: McpTool,
  name: string,
  call: McpCall,
  secretValues: readonly string[],
): AnyTool {
  const { $schema: _dialect, ...jsonSchema } = tool.inputSchema as Record<string, unknown>;
  return {
    name,
    description:
      `${tool.description ?? tool.title ?? tool.name} (tool "${tool.name}" of the MCP server "${server}")`.slice(
        0,
        4000,
      ),
    inputSchema: z.record(z.string(), z.unknown()),
    jsonSchema: { type: "object", ...jsonSchema },
    permission: tool.annotations?.readOnlyHint === true ? "read" : "write",
    describe: (input: Record<string, unknown>) =>
      `mcp · ${server} › ${tool.name} ${JSON.stringify(input).slice(0, 200)}`,
    async execute(input: Record<string, unknown>, context: ToolContext): Promise<ToolResult> {
      let result: CallToolResult;
      try {
        result = await call(tool.name, input, context);
      } catch (error) {
        const message = redactSecrets((error as Error).message ?? String(error), secretValues);
        const hint = readOnlyHint(message);
        return {
          ok: false,
          output: `The MCP server "${server}" failed to run ${tool.name}: ${message}${hint ? `\n${hint}` : ""}`,
          summary: `mcp · ${server} › ${tool.name} failed: ${firstLine(message)}`,
        };
      }
      const { text, truncated } = resultText(result);
      const output = redactSecrets(text, secretValues);
      const failed = result.isError === true;
      const hint = failed ? readOnlyHint(output) : null;
      return {
        ok: !failed,
        output:
          failed && !output
            ? `${tool.name} failed without saying why`
            : hint
              ? `${output}\n${hint}`
              : output,
        summary: failed
          ? `mcp · ${server} › ${tool.name} failed: ${firstLine(output)}`
          : `mcp · ${server} › ${tool.name}: ${output.length} characters${truncated ? " (truncated)" : ""}`,
        data: { server, tool: tool.name, truncated },
      };
    },
  };
}
