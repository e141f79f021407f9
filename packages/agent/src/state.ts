// Phase 0, state initialisation: the turn's memory as plain JSON data with a schema version,
// so a paused or interrupted turn can be stored anywhere and resumed on any drone.
import {
  approvalRequestSchema,
  type ITurnMessage,
  tokenUsageSchema,
  toolCallSchema,
  turnMessageSchema,
  turnModeSchema,
} from "@gadget/protocol";
import { z } from "zod";

export const TURN_STATE_SCHEMA_VERSION = 1;

/** One executed tool call, as kept for synthesis and hosts (outputs stay in the messages). */
export const toolResultRecordSchema = z.object({
  callId: z.string(),
  tool: z.string(),
  ok: z.boolean(),
  summary: z.string(),
  pass: z.number().int().nonnegative(),
});
export type ToolResultRecord = z.infer<typeof toolResultRecordSchema>;

/** How often a call signature ran since the workspace last changed, and how often it failed. */
export const signatureRecordSchema = z.object({
  signature: z.string(),
  count: z.number().int().nonnegative(),
  failures: z.number().int().nonnegative(),
});
export type SignatureRecord = z.infer<typeof signatureRecordSchema>;

/** A call of the current response that has no result yet. */
export const pendingCallSchema = z.object({
  call: toolCallSchema,
  /** Set when the approval policy asks before this call. */
  approvalId: z.string().optional(),
  /** The pass whose response made the call. */
  pass: z.number().int().nonnegative(),
  /** What the PreToolUse hooks made of it (hooks.ts): blocked, new arguments, context to add. */
  hook: z
    .object({
      blocked: z.string().optional(),
      arguments: z.string().optional(),
      context: z.string().optional(),
    })
    .optional(),
});
export type PendingCall = z.infer<typeof pendingCallSchema>;

/** Per pass: did it move the turn forward (the confidence history, measured not asked). */
export const progressMarkSchema = z.enum(["progress", "low"]);
export type ProgressMark = z.infer<typeof progressMarkSchema>;

export const turnStateSchema = z.object({
  schemaVersion: z.literal(TURN_STATE_SCHEMA_VERSION),
  goal: z.string(),
  mode: turnModeSchema,
  /** This turn's messages (not the session history): prompt, assistant, tool results. */
  messages: z.array(turnMessageSchema),
  /** The living document's named sections. */
  document: z.object({ sections: z.record(z.string(), z.string()) }),
  /** The most recent tool results (bounded by `toolResultHistory`). */
  toolResults: z.array(toolResultRecordSchema),
  /** Call signatures since the last successful write by a different call (bounded). */
  executedToolSignatures: z.array(signatureRecordSchema),
  passCount: z.number().int().nonnegative(),
  toolCallCount: z.number().int().nonnegative(),
  tokens: tokenUsageSchema,
  totalCost: z.number().nonnegative(),
  confidenceHistory: z.array(progressMarkSchema),
  /** Consecutive answers with neither text nor tool calls. */
  emptyResponses: z.number().int().nonnegative(),
  /** Set by a pass that detected a loop; read by the exit conditions. */
  stuckSignal: z
    .object({ reason: z.enum(["stuck", "all_tools_duplicate"]), detail: z.string() })
    .nullable(),
  activeModel: z.string(),
  escalated: z.boolean(),
  /** Calls of the current response still to run (a pause for approval leaves some here). */
  pendingCalls: z.array(pendingCallSchema),
  /** Approval requests announced and not yet decided. */
  pendingApprovals: z.array(approvalRequestSchema),
  /** Pre-enrichment markdown: part of the system message on every pass (a stable prompt prefix). */
  preEnrichedContext: z.string().optional(),
  preEnriched: z.boolean(),
  /** The note that replaced older messages when the context was compacted. */
  summary: z.string().optional(),
  compactions: z.number().int().nonnegative(),
  /** Times a Stop hook kept this turn going (at most 3). */
  stopHookContinuations: z.number().int().nonnegative().default(0),
});
export type TurnState = z.infer<typeof turnStateSchema>;

/** A fresh state for a new turn. */
export function createTurnState(options: {
  goal: string;
  mode: TurnState["mode"];
  model: string;
  now: Date;
}): TurnState {
  return {
    schemaVersion: TURN_STATE_SCHEMA_VERSION,
    goal: options.goal,
    mode: options.mode,
    messages: [{ role: "user", content: options.goal, createdAt: options.now }],
    document: { sections: {} },
    toolResults: [],
    executedToolSignatures: [],
    passCount: 0,
    toolCallCount: 0,
    tokens: { input: 0, output: 0, reasoning: 0, cached: 0 },
    totalCost: 0,
    confidenceHistory: [],
    emptyResponses: 0,
    stuckSignal: null,
    activeModel: options.model,
    escalated: false,
    pendingCalls: [],
    pendingApprovals: [],
    preEnriched: false,
    compactions: 0,
    stopHookContinuations: 0,
  };
}

/** The note a tool call gets when its turn stopped before it produced a result. */
export const interruptedOutput =
  "Interrupted: the turn stopped before this call finished. Check the workspace before repeating it.";

/**
 * Rebuilds a state from a turn's stored messages alone (an interrupted turn whose drone died
 * before a checkpoint reached the server). Calls without results get an "interrupted" result, so
 * every call has exactly one.
 */
export function stateFromMessages(options: {
  goal: string;
  mode: TurnState["mode"];
  model: string;
  now: Date;
  messages: ITurnMessage[];
}): TurnState {
  const state = createTurnState(options);
  if (options.messages.length === 0) return state;
  const source = options.messages;
  const messages: ITurnMessage[] = source[0]?.role === "user" ? [] : [...state.messages];
  let index = 0;
  while (index < source.length) {
    const message = source[index] as ITurnMessage;
    index += 1;
    if (message.role === "tool") continue; // only kept next to the call that made it (below)
    messages.push(message);
    if (message.role !== "assistant") continue;
    state.passCount += 1;
    const results = new Map<string, ITurnMessage>();
    while (index < source.length && source[index]?.role === "tool") {
      const result = source[index] as ITurnMessage;
      if (result.toolCallId) results.set(result.toolCallId, result);
      index += 1;
    }
    for (const call of message.toolCalls ?? []) {
      state.toolCallCount += 1;
      messages.push(
        results.get(call.id) ?? {
          role: "tool",
          content: interruptedOutput,
          toolCallId: call.id,
          name: call.name,
          createdAt: options.now,
        },
      );
    }
  }
  state.messages = messages;
  return state;
}

/** Validates a saved state; `undefined` when it is missing, malformed or of another version. */
export function parseTurnState(saved: unknown): TurnState | undefined {
  if (saved === undefined || saved === null) return undefined;
  const result = turnStateSchema.safeParse(saved);
  return result.success ? result.data : undefined;
}

/** A deep, JSON-safe copy for hosts (the engine keeps mutating its own). */
export function snapshotState(state: TurnState): TurnState {
  return structuredClone(state);
}
