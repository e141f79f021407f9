// A tool call before it runs: its arguments parsed and validated once per turn, whether the turn's
// policy makes it wait for a decision, and the approval card that shows it to the user.
import { type ApprovalRequest, fieldIssues, type ToolCall } from "@gadget/protocol";
import { needsApproval } from "./approvals.ts";
import { toolCallSignature } from "./signature.ts";
import type { PendingCall } from "./state.ts";
import { clip } from "./text.ts";
import type { AnyTool } from "./tool.ts";
import type { TurnContext } from "./turn-context.ts";

/** A call parsed and validated once: either runnable (`tool` + `input`) or already failed (`error`). */
export interface PreparedCall {
  pending: PendingCall;
  call: ToolCall;
  tool: AnyTool | undefined;
  /** Parsed JSON arguments (shown in events and approval cards), if they parsed. */
  params: unknown;
  /** Arguments after schema validation. */
  input: unknown;
  /** Why the call cannot run; becomes its result. */
  error: string | undefined;
  /** The one line people see for `error` (default "invalid call"). */
  errorSummary?: string;
  signature: string;
}

/** Prepared forms of each turn's pending calls, so a response is parsed and validated once. */
const preparedCalls = new WeakMap<TurnContext, WeakMap<PendingCall, PreparedCall>>();

/** Parses and validates a call's arguments (cached per turn and pending call). */
export function prepareCall(turn: TurnContext, pending: PendingCall): PreparedCall {
  let cache = preparedCalls.get(turn);
  if (!cache) {
    cache = new WeakMap();
    preparedCalls.set(turn, cache);
  }
  const cached = cache.get(pending);
  if (cached) return cached;
  // A PreToolUse hook's new arguments are the call from here on: validated, approved, run.
  const call = pending.hook?.arguments
    ? { ...pending.call, arguments: pending.hook.arguments }
    : pending.call;
  const tool = turn.toolsByName.get(call.name);
  let params: unknown;
  let input: unknown;
  let error: string | undefined;
  const raw = call.arguments.trim();
  try {
    params = raw === "" ? {} : JSON.parse(raw);
  } catch (parseError) {
    error = `Error: the arguments are not valid JSON (${(parseError as Error).message}). Send one JSON object that matches the ${call.name} parameters.`;
  }
  if (!tool) {
    const available = turn.tools.map((candidate) => candidate.name).join(", ") || "none";
    error = turn.allToolNames.has(call.name)
      ? `Error: ${call.name} is not available in ${turn.mode} mode. Available tools: ${available}.`
      : `Error: unknown tool "${call.name}". Available tools: ${available}.`;
  } else if (error === undefined) {
    const result = tool.inputSchema.safeParse(params);
    if (result.success) input = result.data;
    else {
      const issues = fieldIssues(result.error)
        .map((issue) => `${issue.path}: ${issue.message}`)
        .join("; ");
      error = `Error: invalid arguments for ${call.name}: ${issues}. Fix them and call again.`;
    }
  }
  const blocked = pending.hook?.blocked;
  const prepared: PreparedCall = {
    pending,
    call,
    tool,
    params,
    input,
    error:
      blocked === undefined
        ? error
        : `Error: a project hook blocked this call: ${blocked.trim() || "(it gave no reason)"}`,
    ...(blocked === undefined ? {} : { errorSummary: "blocked by a project hook" }),
    signature: toolCallSignature(call.name, call.arguments, params),
  };
  cache.set(pending, prepared);
  return prepared;
}

/** Whether a prepared call waits for a decision under the turn's policy. */
export function callNeedsApproval(turn: TurnContext, prepared: PreparedCall): boolean {
  return (
    prepared.error === undefined &&
    prepared.tool !== undefined &&
    needsApproval(turn.approval, prepared.tool, prepared.input, turn.allowedCommands)
  );
}

/** The approval card for a call. */
export function approvalRequest(prepared: PreparedCall): ApprovalRequest {
  const { tool, call } = prepared;
  let description = `${call.name} ${clip(call.arguments, 200)}`;
  if (tool?.describe) {
    try {
      description = tool.describe(prepared.input);
    } catch {
      // A describe() that throws must not stop the turn; the generic text is fine.
    }
  }
  return {
    id: prepared.pending.approvalId ?? call.id,
    callId: call.id,
    tool: call.name,
    params: prepared.params,
    description,
  };
}
