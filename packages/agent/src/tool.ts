// The tool interface: what the engine knows of a tool. Hosts (the drone, via @gadget/tools) implement it.
import type { ImageData } from "@gadget/protocol";
import { z } from "zod";

export { ToolError } from "./tool-error.ts";

/** `read` tools run in parallel and exist in every mode; `write` tools run in order and may need approval. */
export type ToolPermission = "read" | "write";

/** A chunk of streamed output (e.g. a running command's stdout). */
export interface ToolOutputChunk {
  stream: "stdout" | "stderr";
  text: string;
}

/** The living document: named sections the model keeps across passes. */
export interface LivingDocument {
  /** Applies updates (appended with a pass label, `confidence` replaced) and returns all sections. */
  update(sections: Record<string, string>): Record<string, string>;
  readonly sections: Readonly<Record<string, string>>;
}

export interface ToolContext {
  /** Aborted when the turn is cancelled or the tool's timeout passes; tools must stop promptly. */
  signal: AbortSignal;
  /** Absolute path of the workspace root; every path the model gives is relative to it. */
  workspace: string;
  /** The model's id for this call, for correlating streamed output. */
  callId: string;
  /** Streams output while the tool runs (becomes `tool_output` events). */
  onOutput?: (chunk: ToolOutputChunk) => void;
  /** The turn's living document, for `update_document`. */
  document: LivingDocument;
  /**
   * The turn's model takes images: a tool may return them (`ToolResult.images`); otherwise it
   * says in words what it found. Absent means false.
   */
  acceptsImages?: boolean;
}

/** What a tool returns. `output` is what the model reads; `summary` is one line for people. */
export interface ToolResult {
  ok: boolean;
  output: string;
  summary: string;
  /** Structured extras for hosts and tests; never sent to the model. */
  data?: unknown;
  /**
   * Images for the model (a read image file, an MCP image result): shown to it after the tool
   * results of its response when it takes images, never stored with the turn (decision 0051).
   */
  images?: ImageData[];
}

export interface Tool<Input = unknown> {
  /** The name the model calls, e.g. `read_file`. */
  name: string;
  /** Written for the model: what it does, when to use it, its limits. */
  description: string;
  /** Validates the model's arguments; also turned into the JSON schema the model sees. */
  inputSchema: z.ZodType<Input>;
  /**
   * The JSON schema the model sees, when the tool comes with its own (an MCP server's tool);
   * `inputSchema` then only checks the arguments are an object and the tool's server checks the rest.
   */
  jsonSchema?: Record<string, unknown>;
  permission: ToolPermission;
  /** Longest the engine lets one call run before aborting it; default: the engine's tool timeout. */
  timeoutMs?: number;
  execute(input: Input, context: ToolContext): Promise<ToolResult>;
  /** One line for an approval card, e.g. "Write src/app.ts (120 lines)". */
  describe?(input: Input): string;
  /**
   * What a standing approval names for this call (run_command: the exact command): a session that
   * always allows it lets the call run without asking. Without it, the tool asks every time.
   */
  standingApproval?(input: Input): string | undefined;
}

/** A tool whose input type is erased, as the engine holds them in a list. */
// biome-ignore lint/suspicious/noExplicitAny: a list of tools holds different input types.
export type AnyTool = Tool<any>;

/**
 * Declares a tool with its input type inferred from the schema.
 * @example
 * const echo = defineTool({
 *   name: "echo", description: "Repeats text.", permission: "read",
 *   inputSchema: z.object({ text: z.string() }),
 *   async execute({ text }) { return { ok: true, output: text, summary: "echoed" }; },
 * });
 */
export function defineTool<Schema extends z.ZodType>(
  tool: Omit<Tool<z.infer<Schema>>, "inputSchema"> & { inputSchema: Schema },
): Tool<z.infer<Schema>> {
  return tool as unknown as Tool<z.infer<Schema>>;
}

/** The JSON schema the model sees for a tool's input. */
export function toolJsonSchema(tool: AnyTool): Record<string, unknown> {
  if (tool.jsonSchema) return tool.jsonSchema;
  const schema = z.toJSONSchema(tool.inputSchema, {
    io: "input",
    unrepresentable: "any",
  }) as Record<string, unknown>;
  delete schema.$schema;
  return schema;
}

/**
 * A source of context loaded before the first pass (pre-enrichment): repo tree,
 * README head, git status, AGENTS.md. Hosts implement these; the engine runs them in parallel.
 */
export interface ContextSource {
  name: string;
  /** Returns markdown for the model, or null when there is nothing to say (e.g. no README). */
  load(context: { signal: AbortSignal; workspace: string }): Promise<string | null>;
}
