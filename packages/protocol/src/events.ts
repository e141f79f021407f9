// The turn event union (docs/reference.md, "Turn events"): what the engine yields, the drone streams and browsers watch.
import { z } from "zod";
import { dateSchema, providerQuirkCodeSchema } from "./common.ts";
import { hookEventDataSchema } from "./project-hooks.ts";

/** Why a turn's loop ended. `completed` is the model answering without tool calls. */
/** Most files a `changes` event lists (the rest are counted in `total`). */
export const MAX_CHANGED_FILES = 1000;
/** Most bytes of paths a `changes` event lists. */
export const MAX_CHANGED_PATH_BYTES = 256 * 1024;

export const exitReasonSchema = z.enum([
  "completed",
  "max_passes",
  "max_tool_calls",
  "token_budget",
  "budget_exceeded",
  "approval_needed",
  "stuck",
  "all_tools_duplicate",
  "cancelled",
  "interrupted",
  /** The drone was stopped (a second Ctrl-C or SIGTERM) while the turn ran. */
  "drone_shutdown",
  /** A provider's rate limit lasted longer than the drone waits for one. */
  "quota_wait_exceeded",
  "error",
]);
export type ExitReason = z.infer<typeof exitReasonSchema>;

export const tokenUsageSchema = z.object({
  input: z.number().int().nonnegative(),
  output: z.number().int().nonnegative(),
  reasoning: z.number().int().nonnegative(),
  cached: z.number().int().nonnegative(),
});
export type TokenUsage = z.infer<typeof tokenUsageSchema>;

export const approvalRequestSchema = z.object({
  id: z.string().min(1),
  callId: z.string().optional(),
  tool: z.string().min(1),
  params: z.unknown(),
  description: z.string(),
  /** `budget`: the turn reached a limit (`params: {limit, used, value}`); approve with `input: {extendBy}`. */
  kind: z.enum(["tool", "budget"]).optional(),
});
export type ApprovalRequest = z.infer<typeof approvalRequestSchema>;

export const fileChangeSchema = z.object({
  path: z.string().min(1),
  status: z.enum(["added", "modified", "deleted"]),
});
export type FileChange = z.infer<typeof fileChangeSchema>;

/**
 * The `status` message (phase `workspace`) of a turn waiting while another turn of its session
 * works in the session's worktree; the web IDE recognises it by this opening.
 */
export const WAITING_FOR_WORKTREE =
  "Waiting for the session's worktree: another turn of this session is using it";

/** The data schema of each event type. */
export const turnEventDataSchemas = {
  queued: z.object({ message: z.string().optional() }),
  dispatched: z.object({ droneId: z.string(), droneName: z.string().optional() }),
  pre_enrichment: z.object({ message: z.string(), toolsRun: z.array(z.string()).optional() }),
  status: z.object({
    message: z.string(),
    /** `warning`: something the user should know about the turn (e.g. no sandbox). Default info. */
    level: z.enum(["info", "warning"]).optional(),
    pass: z.number().int().nonnegative().optional(),
    model: z.string().optional(),
    phase: z.string().optional(),
  }),
  thinking: z.object({ text: z.string() }),
  token: z.object({ text: z.string() }),
  tool_start: z.object({ callId: z.string(), tool: z.string(), params: z.unknown() }),
  tool_output: z.object({
    callId: z.string(),
    stream: z.enum(["stdout", "stderr"]),
    text: z.string(),
  }),
  tool_result: z.object({
    callId: z.string(),
    tool: z.string(),
    ok: z.boolean(),
    summary: z.string(),
    durationMs: z.number().nonnegative().optional(),
  }),
  document_update: z.object({ sections: z.record(z.string(), z.string()) }),
  cost_update: z.object({
    totalCost: z.number().nonnegative(),
    tokens: tokenUsageSchema,
    /** False when the provider has no prices: `totalCost` is then 0 for want of them, not free. */
    priced: z.boolean().optional(),
  }),
  approval: z.object({ approvals: z.array(approvalRequestSchema).min(1) }),
  response: z.object({ message: z.string() }),
  /**
   * The prompt began with `/<name>`: the command it named, from `.gadget/commands/<name>.md` at the
   * turn's starting commit (`source: "file"`, `origin` the file) or an MCP server's prompt
   * (`source: "mcp"`, `origin` the server), and the prompt the model got instead (`prompt`).
   */
  command: z.object({
    name: z.string(),
    source: z.enum(["file", "mcp"]),
    origin: z.string(),
    arguments: z.string(),
    prompt: z.string(),
  }),
  /** A user's message sent to the running turn (POST /api/turns/:id/messages), taken by the model. */
  user_message: z.object({ messageId: z.string().min(1), text: z.string() }),
  /**
   * The end-of-turn changes report: files (at most MAX_CHANGED_FILES, and at most
   * MAX_CHANGED_PATH_BYTES of paths) and a capped unified diff. `total` counts every changed file
   * when the list was cut.
   */
  changes: z.object({
    files: z.array(fileChangeSchema),
    diff: z.string(),
    truncated: z.boolean(),
    total: z.number().int().nonnegative().optional(),
  }),
  /** The outcome of the project's verification commands (the drone's verification step). */
  verification: z.object({
    ok: z.boolean(),
    commands: z.array(
      z.object({ command: z.string(), exitCode: z.number().int().nullable(), output: z.string() }),
    ),
    repairPasses: z.number().int().nonnegative().optional(),
  }),
  /**
   * The turn's work committed to the session's branch (every delivery mode): `commit` is null when
   * the turn changed nothing or the commit failed (its changes then stay in the worktree).
   */
  commit: z.object({ branch: z.string(), commit: z.string().nullable() }),
  /** The session's branch after the turn's commit, pushed to `origin` or why not (delivery `branch`, `pull-request`). */
  delivery: z.object({
    branch: z.string(),
    commit: z.string().nullable(),
    pushed: z.boolean(),
    /** Why the push or the pull request failed, in words (never a credential). */
    error: z.string().optional(),
    /** The session's pull request (delivery `pull-request`), opened or updated after the push. */
    pullRequestUrl: z.string().optional(),
    /** Its number (GitLab: the merge request's iid), which the server remembers for later turns. */
    pullRequestNumber: z.number().int().positive().optional(),
  }),
  done: z.object({
    reason: exitReasonSchema,
    passes: z.number().int().nonnegative(),
    totalCost: z.number().nonnegative(),
  }),
  error: z.object({ code: z.string(), message: z.string() }),
  /**
   * The provider refused a request for a documented reason and the drone adapted it (the call is
   * sent again); the server remembers `quirk` on the turn's provider.
   */
  provider_adapted: z.object({ quirk: providerQuirkCodeSchema, message: z.string() }),
  debug: z.object({ message: z.string(), details: z.unknown().optional() }),
  /**
   * The connection to the turn's drone dropped at `since`: the turn waits `graceMs` for it to come
   * back (and go on) before it is interrupted.
   */
  drone_lost: z.object({
    drone: z.string(),
    droneName: z.string().optional(),
    since: z.string(),
    graceMs: z.number().int().nonnegative(),
  }),
  /**
   * The provider's rate limit outlasted the call's retries: the turn waits until `until` (from
   * its `Retry-After` or `x-ratelimit-reset-*` headers) and calls again by itself.
   */
  quota_wait: z.object({ since: z.string(), until: z.string(), message: z.string() }),
  /** The turn's drone is connected again and goes on with the turn. */
  drone_back: z.object({
    drone: z.string(),
    droneName: z.string().optional(),
    offlineMs: z.number().nonnegative(),
  }),
  /** A project hook ran (PreToolUse, PostToolUse, Stop, SessionStart): its command, outcome and time. */
  hook: hookEventDataSchema,
} as const;

export type TurnEventType = keyof typeof turnEventDataSchemas;
export const turnEventTypes = Object.keys(turnEventDataSchemas) as TurnEventType[];

export type TurnEventData<T extends TurnEventType> = z.infer<(typeof turnEventDataSchemas)[T]>;

/** An event as the engine yields it: numbered and timed later by whoever streams it. */
export type AgentEvent = {
  [T in TurnEventType]: { type: T; data: TurnEventData<T> };
}[TurnEventType];

/** An event as stored and relayed: `seq` starts at 1 and has no gaps per turn. */
export type TurnEvent = AgentEvent & { seq: number; at: Date };

function eventVariant<T extends TurnEventType>(type: T) {
  return z.object({ type: z.literal(type), data: turnEventDataSchemas[type] });
}

const variants = turnEventTypes.map((type) => eventVariant(type));

/** Validates `{type, data}` and checks `data` against that type's schema. */
export const agentEventSchema = z.discriminatedUnion(
  "type",
  variants as unknown as [ReturnType<typeof eventVariant>, ...ReturnType<typeof eventVariant>[]],
) as unknown as z.ZodType<AgentEvent>;

/**
 * Events with envelope fields (`seq`, `at`…): one object per type, discriminated by `type`. An
 * intersection of envelope and `agentEventSchema` would mean the same, but zod parses both sides
 * and deep-merges the results, which costs several times more per event on the ingest path.
 */
export function envelopedEventSchema<Shape extends z.ZodRawShape>(envelope: Shape) {
  const enveloped = turnEventTypes.map((type) => eventVariant(type).extend(envelope));
  return z.discriminatedUnion(
    "type",
    enveloped as unknown as [(typeof enveloped)[number], ...(typeof enveloped)[number][]],
  );
}

/** Validates a stored or relayed event: envelope plus the typed body. */
export const turnEventSchema = envelopedEventSchema({
  seq: z.number().int().positive(),
  at: dateSchema,
}) as unknown as z.ZodType<TurnEvent>;

/** Builds a typed event; handy in engines and tests. */
export function agentEvent<T extends TurnEventType>(type: T, data: TurnEventData<T>): AgentEvent {
  return { type, data } as AgentEvent;
}
