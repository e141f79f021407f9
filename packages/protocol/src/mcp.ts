// A project's MCP servers: the tools its own programs (stdio, started by the drone inside the
// sandbox) or remote services (Streamable HTTP) offer the agent. Secrets (env values, bearer
// tokens) travel in; the API answers only which are set.
import { z } from "zod";

/** Most servers one project lists. */
export const MAX_MCP_SERVERS = 20;

/**
 * A server's name: lowercase letters, digits, `-` and single `_`, up to 32 characters. No `__`,
 * so `mcp__<server>__<tool>` names the server unambiguously.
 */
export const mcpServerNameSchema = z
  .string()
  .regex(
    /^[a-z0-9](?:[a-z0-9-]|_(?!_)){0,31}$/,
    "lowercase letters, digits, - and _ (not __), up to 32 characters, starting with a letter or digit",
  );

/** An environment variable's name, as a project or an MCP server sets one. */
export const envNameSchema = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, "an environment variable name");

/**
 * Variables as a body sets them: write-only values (the whole map; a value `null` keeps the
 * stored one of that name, a name left out is removed).
 */
export const envBodySchema = z
  .record(envNameSchema, z.string().max(8192).nullable())
  .refine((env) => Object.keys(env).length <= 50, "at most 50 variables");

const commandSchema = z.array(z.string().min(1).max(4096)).min(1).max(64);

const urlSchema = z
  .url({ protocol: /^https?$/ })
  .max(2048)
  .refine((value) => {
    const url = new URL(value);
    return !url.username && !url.password;
  }, "an MCP URL has no user name or password (use bearerToken)");

const toolsSchema = z.array(z.string().min(1).max(128)).max(200);

/** Each server once by name. */
function uniqueNames(servers: ReadonlyArray<{ name: string }>, context: z.RefinementCtx): void {
  const seen = new Set<string>();
  servers.forEach((server, index) => {
    if (seen.has(server.name)) {
      context.addIssue({
        code: "custom",
        path: [index, "name"],
        message: `two MCP servers are named "${server.name}"`,
      });
    }
    seen.add(server.name);
  });
}

/**
 * One server as `PATCH /api/projects/:id` sets it: exactly one of `command` (stdio, argv) or `url`
 * (Streamable HTTP). `env` (stdio) and `bearerToken` (remote) are write-only: an env value `null`,
 * or `env` / `bearerToken` left out, keeps what the server of that name has stored; `bearerToken:
 * null` removes it.
 */
export const mcpServerBodySchema = z
  .object({
    name: mcpServerNameSchema,
    command: commandSchema.optional(),
    url: urlSchema.optional(),
    env: envBodySchema.optional(),
    bearerToken: z.string().trim().min(1).max(8192).nullable().optional(),
    /** Only these of the server's tools are offered (by the server's own tool names). */
    tools: toolsSchema.optional(),
  })
  .strict()
  .superRefine((server, context) => {
    if ((server.command === undefined) === (server.url === undefined)) {
      context.addIssue({
        code: "custom",
        path: ["command"],
        message: "give exactly one of command (a stdio server) or url (a remote server)",
      });
    }
    if (server.url !== undefined && server.env !== undefined) {
      context.addIssue({ code: "custom", path: ["env"], message: "env is for stdio servers" });
    }
    if (server.command !== undefined && server.bearerToken) {
      context.addIssue({
        code: "custom",
        path: ["bearerToken"],
        message: "bearerToken is for remote servers",
      });
    }
  });
export type McpServerBody = z.infer<typeof mcpServerBodySchema>;

export const mcpServersBodySchema = z
  .array(mcpServerBodySchema)
  .max(MAX_MCP_SERVERS)
  .superRefine(uniqueNames);

/** A server as the API answers: the names of its env variables and whether a token is set. */
export const projectMcpServerSchema = z.object({
  name: z.string(),
  command: z.array(z.string()).optional(),
  url: z.string().optional(),
  envKeys: z.array(z.string()),
  hasBearerToken: z.boolean(),
  tools: z.array(z.string()).optional(),
});
export type ProjectMcpServer = z.infer<typeof projectMcpServerSchema>;

/** A server as a work order carries it to the drone: with its secrets, opened for this turn. */
export const workOrderMcpServerSchema = z.object({
  name: mcpServerNameSchema,
  command: commandSchema.optional(),
  url: urlSchema.optional(),
  env: z.record(z.string(), z.string()).default({}),
  bearerToken: z.string().min(1).optional(),
  tools: toolsSchema.optional(),
});
export type WorkOrderMcpServer = z.infer<typeof workOrderMcpServerSchema>;

/** `mcp__<server>__<tool>` as the model sees it, or null for a built-in tool's name. */
export function parseMcpToolName(name: string): { server: string; tool: string } | null {
  const match = /^mcp__([a-z0-9](?:[a-z0-9-]|_(?!_))*)__(.+)$/.exec(name);
  return match ? { server: match[1] as string, tool: match[2] as string } : null;
}
