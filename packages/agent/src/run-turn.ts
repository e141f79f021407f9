// The Agentic Workflow Loop (docs/architecture.md, "The engine"): an async generator of turn events that runs
// state → pre-enrichment → passes (model, tools) → escalation → synthesis → done.
import {
  type AgentEvent,
  type ApprovalRequest,
  agentEvent,
  type ExitReason,
  type ITurnMessage,
  splitThinking,
  withThinking,
} from "@gadget/protocol";
import { isAbortError, linkedController } from "./abort.ts";
import { approvalIdFor } from "./approvals.ts";
import { askToExtend } from "./budget-ask.ts";
import { callNeedsApproval, prepareCall } from "./call-preparation.ts";
import { maybeEscalate, recordProgress } from "./escalation.ts";
import { checkExitConditions } from "./exit-conditions.ts";
import { preToolUse, sessionStart, stopHookContinues } from "./hooks.ts";
import { callForPass, uniqueCallIds } from "./pass-call.ts";
import { preEnrich } from "./pre-enrichment.ts";
import { ProviderError } from "./provider-error.ts";
import { createTurnState, type TurnState } from "./state.ts";
import { SteeringInterrupt } from "./steering.ts";
import { takeSteering } from "./steering-step.ts";
import { duplicateVerdict, wasExecuted } from "./stuck-detection.ts";
import { synthesize } from "./synthesis.ts";
import { answerWithoutRunning, duplicateOutput, executePendingCalls } from "./tool-execution.ts";
import { accountUsage, checkpoint, type TurnContext } from "./turn-context.ts";
import type { TurnInput, TurnOptions, TurnOutcome } from "./turn-input.ts";
import { createTurnContext } from "./turn-setup.ts";

/** What one step of the loop decided (openai-agents-js runner/steps.ts). */
export type StepOutcome =
  | { type: "run_again" }
  | { type: "respond"; message: string }
  | { type: "pause"; approvals: ApprovalRequest[] }
  | { type: "exit"; reason: ExitReason; detail: string; error?: { code: string; message: string } };

/**
 * Runs one turn, yielding its events as they happen and returning the outcome. Always ends
 * with exactly one `done` event; never throws (failures become `error` + `done`).
 *
 * @example
 * const turn = runTurn(
 *   { goal: "Fix the failing test", provider, workspace: "/work/p", tools, mode: "agent" },
 *   { signal, onApproval: approvals.handler, onCheckpoint: (state) => save(state) },
 * );
 * let step = await turn.next();
 * while (!step.done) { relay(step.value); step = await turn.next(); }
 * const outcome = step.value; // { reason, response, messages, state, … }
 */
export async function* runTurn(
  input: TurnInput,
  options: TurnOptions = {},
): AsyncGenerator<AgentEvent, TurnOutcome> {
  const { controller, dispose } = linkedController(options.signal);
  try {
    let turn: TurnContext;
    try {
      turn = createTurnContext(input, options, controller.signal);
    } catch (error) {
      return yield* failBeforeStart(input, options, error);
    }
    return yield* runPhases(turn);
  } finally {
    dispose();
    // Stops whatever is still running if the consumer stopped iterating early.
    controller.abort();
  }
}

async function* failBeforeStart(
  input: TurnInput,
  options: TurnOptions,
  error: unknown,
): AsyncGenerator<AgentEvent, TurnOutcome> {
  const message = `Invalid turn input: ${error instanceof Error ? error.message : String(error)}`;
  options.logger?.error({ err: error }, message);
  const state = createTurnState({
    goal: typeof input?.goal === "string" ? input.goal : "",
    mode: input?.mode ?? "agent",
    model: input?.provider?.modelId ?? "",
    now: new Date(),
  });
  yield agentEvent("error", { code: "invalid_input", message });
  yield agentEvent("done", { reason: "error", passes: 0, totalCost: 0 });
  return outcomeOf(state, "error", "", { code: "invalid_input", message });
}

async function* runPhases(turn: TurnContext): AsyncGenerator<AgentEvent, TurnOutcome> {
  let step: StepOutcome;
  try {
    if (!turn.state.preEnriched && turn.state.passCount === 0) {
      yield* preEnrich(turn);
      yield* sessionStart(turn);
    }
    step = yield* mainLoop(turn);
  } catch (error) {
    step = failureStep(turn, error);
  }
  return yield* finish(turn, step);
}

async function* mainLoop(turn: TurnContext): AsyncGenerator<AgentEvent, StepOutcome> {
  const { state } = turn;
  const answered = answeredAlready(state);
  if (answered !== undefined) return { type: "respond", message: answered };
  while (true) {
    if (state.pendingCalls.length > 0) {
      // A resumed response (paused for approval or interrupted) finishes before anything else.
      if ((yield* executePendingCalls(turn)) === "paused") return pauseStep(turn);
      await checkpoint(turn);
    }
    // The step boundary: users' messages join the conversation before the next model call.
    yield* takeSteering(turn);
    const exit = checkExitConditions(turn);
    if (exit && !(yield* askToExtend(turn, exit)))
      return { type: "exit", reason: exit.reason, detail: exit.detail };
    if (exit) continue;
    const step = yield* interruptiblePass(turn);
    // An answer with messages waiting is not the end: the model hears them first.
    if (step.type === "respond" && turn.options.steering?.size) continue;
    // Nor is one a project's Stop hook finds unfinished (its reason joins as a user message).
    if (step.type === "respond" && (yield* stopHookContinues(turn, step.message))) continue;
    if (step.type !== "run_again") return step;
    const escalation = maybeEscalate(turn);
    if (escalation) yield escalation;
    await checkpoint(turn);
  }
}

/**
 * A pass an interrupting message can stop: its model call or tool calls are aborted (what
 * streamed stays in the turn's events), calls left without a result are answered as stopped, and
 * the loop goes on to take the message.
 */
async function* interruptiblePass(turn: TurnContext): AsyncGenerator<AgentEvent, StepOutcome> {
  const inbox = turn.options.steering;
  if (!inbox) return yield* runPass(turn);
  const { controller, dispose } = linkedController(turn.signal);
  const stop = inbox.onInterrupt(() => controller.abort(new SteeringInterrupt()));
  try {
    return yield* runPass({ ...turn, signal: controller.signal });
  } catch (error) {
    if (turn.signal.aborted || !(controller.signal.reason instanceof SteeringInterrupt))
      throw error;
    yield agentEvent("status", {
      message: "Interrupted by a message from the user",
      pass: turn.state.passCount,
      phase: "model",
    });
    const stopped = turn.state.pendingCalls.map((pending) => prepareCall(turn, pending));
    if (stopped.length > 0) {
      yield* answerWithoutRunning(
        turn,
        stopped,
        "Stopped: the user interrupted this call to send a message.",
        "stopped: interrupted by the user",
      );
    }
    return { type: "run_again" };
  } finally {
    stop();
    dispose();
  }
}

/** A resumed turn whose last message is already a final answer needs no more passes. */
function answeredAlready(state: TurnState): string | undefined {
  const last = state.messages.at(-1);
  if (state.passCount === 0 || !last || last.role !== "assistant" || last.toolCalls?.length)
    return undefined;
  if (state.pendingCalls.length > 0) return undefined;
  return splitThinking(last.content).content;
}

function pauseStep(turn: TurnContext): StepOutcome {
  return { type: "pause", approvals: turn.state.pendingApprovals };
}

/** One pass: call the model, then answer, or run the tools it asked for. */
async function* runPass(turn: TurnContext): AsyncGenerator<AgentEvent, StepOutcome> {
  const { state } = turn;
  const pass = state.passCount + 1;
  state.passCount = pass;
  yield agentEvent("status", {
    message: `Pass ${pass}`,
    pass,
    model: state.activeModel,
    phase: "model",
  });
  const reply = yield* callForPass(turn, pass);
  yield accountUsage(turn, reply.usage);

  if (reply.toolCalls.length === 0) {
    if (reply.text.trim()) {
      state.emptyResponses = 0;
      state.messages.push({
        role: "assistant",
        content: withThinking(reply.thinking, reply.text),
        ...(reply.providerFields ? { providerFields: reply.providerFields } : {}),
        createdAt: turn.now(),
      });
      recordProgress(turn, "progress");
      return { type: "respond", message: reply.text };
    }
    state.emptyResponses += 1;
    recordProgress(turn, "low");
    if (state.emptyResponses >= turn.tunables.maxEmptyResponses)
      state.stuckSignal = {
        reason: "stuck",
        detail: `the model answered with neither text nor tool calls ${state.emptyResponses} times in a row`,
      };
    return { type: "run_again" };
  }

  state.emptyResponses = 0;
  const calls = uniqueCallIds(reply);
  const message: ITurnMessage = {
    role: "assistant",
    content: withThinking(reply.thinking, reply.text),
    toolCalls: calls,
    // Sent back as received on the next request (and kept for a resumed turn).
    ...(reply.providerFields ? { providerFields: reply.providerFields } : {}),
    createdAt: turn.now(),
  };
  state.messages.push(message);
  // Pending at once, so an interrupt during the hooks still answers every call.
  const pending: TurnState["pendingCalls"] = calls.map((call) => ({ call, pass }));
  state.pendingCalls = pending;
  // PreToolUse hooks first: what is approved, checked for repeats and run is what they made of it.
  for (const [index, entry] of pending.entries()) pending[index] = yield* preToolUse(turn, entry);
  const prepared = pending.map((entry) => prepareCall(turn, entry));
  prepared.forEach((entry, position) => {
    if (callNeedsApproval(turn, entry)) entry.pending.approvalId = approvalIdFor(pass, position);
  });

  if (prepared.every((entry) => wasExecuted(state, entry.signature))) {
    // Nothing new was asked: answer each call with a pointer to its earlier result and stop.
    const signatures = prepared.map((entry) => ({
      signature: entry.signature,
      tool: entry.call.name,
    }));
    state.stuckSignal = duplicateVerdict(state, signatures, turn.tunables);
    yield* answerWithoutRunning(
      turn,
      prepared,
      duplicateOutput,
      "not run: repeats an earlier call",
    );
    recordProgress(turn, "low");
    return { type: "run_again" };
  }

  state.pendingCalls = pending;
  if ((yield* executePendingCalls(turn)) === "paused") return pauseStep(turn);
  const results = state.toolResults.filter((result) => result.pass === pass);
  const low =
    state.stuckSignal !== null || (results.length > 0 && results.every((result) => !result.ok));
  recordProgress(turn, low ? "low" : "progress");
  return { type: "run_again" };
}

function failureStep(turn: TurnContext, error: unknown): StepOutcome {
  if (isAbortError(error) || turn.signal.aborted)
    return { type: "exit", reason: "cancelled", detail: "the turn was cancelled" };
  if (error instanceof ProviderError)
    return {
      type: "exit",
      reason: error.code === "quota_wait_exceeded" ? "quota_wait_exceeded" : "error",
      detail: error.message,
      error: { code: error.code, message: error.message },
    };
  turn.logger.error({ err: error }, "agent engine failed");
  const message = `Internal error in the agent engine: ${error instanceof Error ? error.message : String(error)}`;
  return { type: "exit", reason: "error", detail: message, error: { code: "internal", message } };
}

/** Phases 4 and 5: synthesis when needed, then the response and the one `done` event. */
async function* finish(
  turn: TurnContext,
  step: StepOutcome,
): AsyncGenerator<AgentEvent, TurnOutcome> {
  const { state } = turn;
  let reason: ExitReason;
  let response = "";
  let error: { code: string; message: string } | undefined;
  switch (step.type) {
    case "respond":
      reason = "completed";
      response = step.message;
      yield agentEvent("response", { message: response });
      break;
    case "pause":
      reason = "approval_needed";
      await checkpoint(turn);
      break;
    case "run_again":
      throw new Error("unreachable: finish() after run_again");
    case "exit":
      reason = step.reason;
      if (step.reason === "error" || step.reason === "quota_wait_exceeded") {
        error = step.error ?? { code: "internal", message: step.detail };
        yield agentEvent("error", error);
      } else if (step.reason !== "cancelled") {
        yield agentEvent("status", {
          message: `Stopping: ${step.detail}. Writing the final answer from what was gathered.`,
          pass: state.passCount,
          phase: "synthesis",
        });
        try {
          response = yield* synthesize(turn, step.reason, step.detail);
          state.messages.push({ role: "assistant", content: response, createdAt: turn.now() });
          yield agentEvent("response", { message: response });
        } catch (failure) {
          const fallback = failureStep(turn, failure);
          reason = fallback.type === "exit" ? fallback.reason : "error";
          if (fallback.type === "exit" && fallback.error) {
            error = fallback.error;
            yield agentEvent("error", error);
          }
        }
      }
      break;
  }
  yield agentEvent("done", { reason, passes: state.passCount, totalCost: state.totalCost });
  return outcomeOf(state, reason, response, error);
}

function outcomeOf(
  state: TurnState,
  reason: ExitReason,
  response: string,
  error?: { code: string; message: string },
): TurnOutcome {
  const outcome: TurnOutcome = {
    reason,
    response,
    messages: state.messages,
    state,
    passes: state.passCount,
    usage: { ...state.tokens },
    totalCost: state.totalCost,
  };
  if (error) outcome.error = error;
  return outcome;
}
