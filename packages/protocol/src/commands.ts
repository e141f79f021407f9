// A project's commands (`/name args` in a prompt): `.gadget/commands/<name>.md` of the repository
// and its MCP servers' prompts, as the composer lists them and a drone answers for them.
import { z } from "zod";
import { objectIdSchema } from "./common.ts";

/** Most commands one listing holds (files and MCP prompts together). */
export const MAX_PROJECT_COMMANDS = 200;

/**
 * A command's name as typed after `/`: a letter or digit first, then letters, digits, `_`, `-`,
 * `.` (an MCP prompt's is `mcp__<server>__<prompt>`).
 */
export const commandNameSchema = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, "letters, digits, _, - and . only");

export const projectCommandSchema = z.object({
  name: commandNameSchema,
  description: z.string().max(500),
  /** `file`: `.gadget/commands/<name>.md`; `mcp`: a prompt of the project's MCP server `server`. */
  source: z.enum(["file", "mcp"]),
  server: z.string().max(100).optional(),
  /** What the arguments are, in words (front matter `argument-hint`, an MCP prompt's arguments). */
  argumentHint: z.string().max(200).optional(),
});
export type ProjectCommand = z.infer<typeof projectCommandSchema>;

export const projectCommandsAnswerSchema = z.object({
  commands: z.array(projectCommandSchema).max(MAX_PROJECT_COMMANDS),
});
export type ProjectCommandsAnswer = z.infer<typeof projectCommandsAnswerSchema>;

/**
 * The server asks a drone holding the project: with `sessionId`, the commands of that session's
 * branch head; without, of the default-branch checkout's head. MCP prompts are those its servers
 * offered at the project's last turn on that drone.
 */
export const projectCommandsRequestSchema = z.object({
  projectSlug: z.string().min(1),
  sessionId: objectIdSchema.optional(),
});
export type ProjectCommandsRequest = z.infer<typeof projectCommandsRequestSchema>;

export const projectCommandsQuerySchema = z.object({ session: objectIdSchema.optional() });
