// Project hooks in the loop (docs/reference.md, "Project hooks"): the host runs them (the drone, in
// the turn's sandbox); the engine decides what their verdicts mean: a PreToolUse hook blocks or
// rewrites a call before it is approved, PostToolUse adds context to a result, Stop keeps the loop
// going (at most 3 times a turn), SessionStart adds context to a session's first turn.
import { type AgentEvent, agentEvent } from "@gadget/protocol";
import { prepareCall } from "./call-preparation.ts";
import type { HookVerdict } from "./hook-host.ts";
import type { PendingCall } from "./state.ts";
import { clip } from "./text.ts";
import type { TurnContext } from "./turn-context.ts";

/** Times a Stop hook may keep one turn going. */
export const maxStopContinuations = 3;

/** Most characters of a tool result a PostToolUse hook is given. */
const maxResultForHook = 20_000;

function hookEvents(verdict: HookVerdict): AgentEvent[] {
  return verdict.runs.map((run) => agentEvent("hook", run));
}

/**
 * Runs the PreToolUse hooks of a call that can run (known tool, arguments that parse) and returns
 * the pending call with their verdict; unchanged when no hook matches.
 */
export async function* preToolUse(
  turn: TurnContext,
  pending: PendingCall,
): AsyncGenerator<AgentEvent, PendingCall> {
  const hooks = turn.options.hooks;
  const { call } = pending;
  if (!hooks?.has("PreToolUse", call.name) || pending.hook) return pending;
  const prepared = prepareCall(turn, pending);
  if (prepared.error !== undefined) return pending;
  const verdict = await hooks.run(
    { event: "PreToolUse", tool: call.name, callId: call.id, params: prepared.params },
    { signal: turn.signal },
  );
  yield* hookEvents(verdict);
  const hook: NonNullable<PendingCall["hook"]> = {};
  if (verdict.blocked !== undefined) hook.blocked = verdict.blocked;
  else if (verdict.params) hook.arguments = JSON.stringify(verdict.params);
  if (verdict.context) hook.context = verdict.context;
  return { ...pending, hook };
}

/** Runs the PostToolUse hooks of a call that ran; returns the context they add to its output. */
export async function postToolUse(
  turn: TurnContext,
  call: { id: string; name: string; params: unknown },
  result: { ok: boolean; output: string; summary: string },
  emit: (event: AgentEvent) => void,
): Promise<string | undefined> {
  const hooks = turn.options.hooks;
  if (!hooks?.has("PostToolUse", call.name)) return undefined;
  const verdict = await hooks.run(
    {
      event: "PostToolUse",
      tool: call.name,
      callId: call.id,
      params: call.params,
      result: { ...result, output: clip(result.output, maxResultForHook) },
    },
    { signal: turn.signal },
  );
  for (const event of hookEvents(verdict)) emit(event);
  // After the fact a block cannot undo the call: its reason is what the model should read.
  const parts = [verdict.context, verdict.blocked].filter((part): part is string => !!part?.trim());
  return parts.length > 0 ? parts.join("\n") : undefined;
}

/** The text a hook's context adds to a tool's output. */
export function withHookContext(output: string, context: string | undefined): string {
  if (!context?.trim()) return output;
  return `${output}\n\n[Project hook]\n${context.trim()}`;
}

/**
 * Runs the Stop hooks when the model answers: a hook that exits 2 keeps the loop going with its
 * stderr as a user message (at most {@link maxStopContinuations} times a turn). Returns whether
 * the loop goes on.
 */
export async function* stopHookContinues(
  turn: TurnContext,
  response: string,
): AsyncGenerator<AgentEvent, boolean> {
  const hooks = turn.options.hooks;
  const { state } = turn;
  if (!hooks?.has("Stop")) return false;
  if (state.stopHookContinuations >= maxStopContinuations) {
    yield agentEvent("status", {
      message: `Stop hooks kept this turn going ${maxStopContinuations} times; the turn ends with this answer`,
      level: "warning",
      phase: "hooks",
    });
    return false;
  }
  const verdict = await hooks.run({ event: "Stop", response }, { signal: turn.signal });
  yield* hookEvents(verdict);
  if (verdict.blocked === undefined) return false;
  state.stopHookContinuations += 1;
  state.messages.push({
    role: "user",
    content: `A project Stop hook says the work is not finished yet; go on:\n${verdict.blocked.trim() || "(it gave no reason)"}`,
    createdAt: turn.now(),
  });
  return true;
}

/** Runs the SessionStart hooks on a session's first turn; their context joins the project context. */
export async function* sessionStart(turn: TurnContext): AsyncGenerator<AgentEvent, void> {
  const hooks = turn.options.hooks;
  const { state } = turn;
  if (!hooks?.has("SessionStart") || turn.history.length > 0 || state.passCount > 0) return;
  const verdict = await hooks.run({ event: "SessionStart" }, { signal: turn.signal });
  yield* hookEvents(verdict);
  if (!verdict.context?.trim()) return;
  const section = `## From the project's SessionStart hooks\n${verdict.context.trim()}`;
  state.preEnrichedContext = state.preEnrichedContext
    ? `${state.preEnrichedContext}\n\n${section}`
    : section;
}
