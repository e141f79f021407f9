// A project's hooks (docs/reference.md, "Project hooks"): commands the drone runs in the turn's
// sandbox at PreToolUse, PostToolUse, Stop and SessionStart, from `.gadget/hooks.json` or the
// project's settings; what a hook is given on stdin and may answer; the `hook` event of a turn.
import { z } from "zod";

export const hookEventNameSchema = z.enum(["PreToolUse", "PostToolUse", "Stop", "SessionStart"]);
export type HookEventName = z.infer<typeof hookEventNameSchema>;

/** Longest a hook may run (`timeoutMs`); default 30 s. */
export const MAX_HOOK_TIMEOUT_MS = 600_000;
export const DEFAULT_HOOK_TIMEOUT_MS = 30_000;

/** Whether `source` compiles as a JavaScript regular expression. */
function compiles(source: string): boolean {
  try {
    new RegExp(source);
    return true;
  } catch {
    return false;
  }
}

/** One hook: a program (argv, never a shell) and, for tool events, which tools it is for. */
export const hookSchema = z
  .object({
    /** A regular expression matched against the whole tool name (`run_command`, `write_file|edit_file`); absent: every tool. */
    matcher: z.string().max(500).refine(compiles, "must be a valid regular expression").optional(),
    command: z.array(z.string().min(1).max(4000)).min(1).max(100),
    timeoutMs: z.number().int().min(100).max(MAX_HOOK_TIMEOUT_MS).optional(),
  })
  .strict();
export type Hook = z.infer<typeof hookSchema>;

const hookListSchema = z.array(hookSchema).max(20);

/** `.gadget/hooks.json` and the project's `hooks` field: hooks per event. */
export const hooksConfigSchema = z
  .object({
    PreToolUse: hookListSchema.optional(),
    PostToolUse: hookListSchema.optional(),
    Stop: hookListSchema.optional(),
    SessionStart: hookListSchema.optional(),
  })
  .strict();
export type HooksConfig = z.infer<typeof hooksConfigSchema>;

/** What a hook may print on stdout (exit 0): new params for the call, context for the model. */
export const hookAnswerSchema = z
  .object({
    params: z.record(z.string(), z.unknown()).optional(),
    context: z.string().max(20_000).optional(),
  })
  .loose();
export type HookAnswer = z.infer<typeof hookAnswerSchema>;

/**
 * What a hook's run came to: `continue` (exit 0, nothing to say), `context` (it added context),
 * `rewrote` (new params), `blocked` (exit 2), `failed` (another exit code, bad output, could not
 * start), `timeout` (killed after its timeout).
 */
export const hookOutcomeSchema = z.enum([
  "continue",
  "context",
  "rewrote",
  "blocked",
  "failed",
  "timeout",
]);
export type HookOutcome = z.infer<typeof hookOutcomeSchema>;

/** The `hook` event: which hook ran, for which call, what it came to and how long it took. */
export const hookEventDataSchema = z.object({
  event: hookEventNameSchema,
  /** The hook's command as one line. */
  command: z.string(),
  ok: z.boolean(),
  outcome: hookOutcomeSchema,
  ms: z.number().nonnegative(),
  /** Its stderr/stdout (or why it failed), shortened. */
  output: z.string(),
  callId: z.string().optional(),
  tool: z.string().optional(),
});
export type HookEventData = z.infer<typeof hookEventDataSchema>;
