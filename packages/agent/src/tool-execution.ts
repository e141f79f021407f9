// Tool execution (docs/architecture.md, "Tools, approvals and pauses"): every call gets exactly one result, read calls run in parallel,
// write calls in order, results are appended in the model's call order, approvals are awaited.
import { type AgentEvent, agentEvent, fieldIssues, type ITurnMessage } from "@gadget/protocol";
import { isAbortError, linkedController, raceAbort } from "./abort.ts";
import { type ApprovalDecision, declinedOutput, standingKey } from "./approvals.ts";
import {
  approvalRequest,
  callNeedsApproval,
  type PreparedCall,
  prepareCall,
} from "./call-preparation.ts";
import { EventQueue } from "./event-queue.ts";
import { postToolUse, withHookContext } from "./hooks.ts";
import { recordExecution, stuckVerdict } from "./stuck-detection.ts";
import { clip } from "./text.ts";
import { ToolError, type ToolResult } from "./tool.ts";
import { checkpoint, type TurnContext } from "./turn-context.ts";

interface CallOutcome {
  ok: boolean;
  output: string;
  summary: string;
}

/**
 * Runs the state's pending calls in order. Returns `paused` when a call needs a decision and
 * there is no approval handler; the remaining calls stay pending in the state.
 */
export async function* executePendingCalls(
  turn: TurnContext,
): AsyncGenerator<AgentEvent, "done" | "paused"> {
  const { state } = turn;
  const prepared = state.pendingCalls.map((pending) => prepareCall(turn, pending));
  const limit = turn.limits.maxToolCalls;
  const allowed =
    limit === undefined ? Number.POSITIVE_INFINITY : Math.max(0, limit - state.toolCallCount);

  const undecided = prepared
    .filter((call, position) => position < allowed && callNeedsApproval(turn, call))
    .filter((call) => !turn.knownDecisions.has(call.pending.approvalId ?? ""))
    .map(approvalRequest);
  state.pendingApprovals = undecided;
  if (undecided.length > 0) yield agentEvent("approval", { approvals: undecided });

  const ran: PreparedCall[] = [];
  let position = 0;
  while (position < prepared.length) {
    const current = prepared[position] as PreparedCall;
    if (position >= allowed) {
      yield* answerWithoutRunning(
        turn,
        [current],
        `Not run: the turn's limit of ${limit} tool calls was reached.`,
        "not run: tool-call limit reached",
      );
      position += 1;
      continue;
    }
    if (callNeedsApproval(turn, current)) {
      const approvalId = current.pending.approvalId ?? current.call.id;
      let decision = turn.knownDecisions.get(approvalId);
      if (decision) turn.knownDecisions.delete(approvalId);
      else {
        const handler = turn.options.onApproval;
        if (!handler) return "paused";
        await checkpoint(turn);
        decision = await raceAbort(
          handler(approvalRequest(current), { signal: turn.signal }),
          turn.signal,
        );
      }
      state.pendingApprovals = state.pendingApprovals.filter(
        (request) => request.id !== approvalId,
      );
      // "Always allow": the same command later in this turn (and this batch) runs without asking.
      const key = current.tool ? standingKey(current.tool, current.input) : undefined;
      if (decision.approve && decision.alwaysAllow && decision.input === undefined && key) {
        turn.allowedCommands.add(key);
      }
      const chosen = decision;
      yield* finishGroup(turn, [current], (emit) => runDecided(turn, current, chosen, emit), true);
      ran.push(current);
      position += 1;
      continue;
    }
    // Consecutive read calls (and calls that already failed validation) form one parallel group;
    // a write call runs alone, so it sees the effects of the calls before it.
    const parallelSafe = (call: PreparedCall) =>
      call.error !== undefined ||
      (call.tool?.permission === "read" && !callNeedsApproval(turn, call));
    let end = position + 1;
    if (parallelSafe(current))
      while (end < prepared.length && end < allowed && parallelSafe(prepared[end] as PreparedCall))
        end += 1;
    const group = prepared.slice(position, end);
    yield* finishGroup(turn, group, (emit) => runGroup(turn, group, emit), true);
    ran.push(...group);
    position = end;
  }
  state.pendingApprovals = [];
  const verdict = stuckVerdict(
    state,
    ran.map((call) => ({ signature: call.signature, tool: call.call.name })),
    turn.tunables,
  );
  if (verdict) state.stuckSignal = { reason: "stuck", detail: verdict };
  return "done";
}

type Emit = (event: AgentEvent) => void;

/**
 * Runs `work` while relaying the events it emits, then appends the group's results in call
 * order, updates counts and signatures, and drops the calls from the pending list.
 */
async function* finishGroup(
  turn: TurnContext,
  group: PreparedCall[],
  work: (emit: Emit) => Promise<CallOutcome[]>,
  counts: boolean,
): AsyncGenerator<AgentEvent, void> {
  const { state } = turn;
  const documentVersion = turn.document.version;
  const queue = new EventQueue<AgentEvent>();
  const running = work((event) => queue.push(event)).finally(() => queue.close());
  running.catch(() => undefined); // awaited below; this only silences the early-rejection warning
  for await (const event of queue) yield event;
  const outcomes = await running;

  const now = turn.now();
  group.forEach((prepared, index) => {
    const outcome = outcomes[index] as CallOutcome;
    const message: ITurnMessage = {
      role: "tool",
      content: clip(outcome.output, turn.tunables.maxToolOutputChars),
      toolCallId: prepared.call.id,
      name: prepared.call.name,
      createdAt: now,
    };
    state.messages.push(message);
    if (counts) {
      state.toolCallCount += 1;
      state.toolResults.push({
        callId: prepared.call.id,
        tool: prepared.call.name,
        ok: outcome.ok,
        summary: outcome.summary,
        pass: prepared.pending.pass,
      });
      if (state.toolResults.length > turn.tunables.toolResultHistory) state.toolResults.shift();
      recordExecution(
        state,
        prepared.signature,
        outcome.ok,
        prepared.tool?.permission === "write",
        turn.tunables,
      );
    }
  });
  state.pendingCalls = state.pendingCalls.slice(group.length);
  if (turn.document.version !== documentVersion)
    yield agentEvent("document_update", { sections: { ...state.document.sections } });
}

/** Runs an approved call (with replacement input if given) or returns the declined result. */
async function runDecided(
  turn: TurnContext,
  prepared: PreparedCall,
  decision: ApprovalDecision,
  emit: Emit,
): Promise<CallOutcome[]> {
  if (!decision.approve) return [announce(prepared, failed(declinedOutput, declinedOutput), emit)];
  let input = prepared.input;
  if (decision.input !== undefined && prepared.tool) {
    const parsed = prepared.tool.inputSchema.safeParse(decision.input);
    if (!parsed.success) {
      const issues = fieldIssues(parsed.error)
        .map((issue) => `${issue.path}: ${issue.message}`)
        .join("; ");
      const output = `Error: the arguments given with the approval are invalid: ${issues}.`;
      return [announce(prepared, failed(output, "approved arguments invalid"), emit)];
    }
    input = parsed.data;
  }
  return [await runCall(turn, prepared, input, emit)];
}

/** Emits start and result for a call that is answered without running. */
function announce(prepared: PreparedCall, outcome: CallOutcome, emit: Emit): CallOutcome {
  const { call } = prepared;
  emit(
    agentEvent("tool_start", {
      callId: call.id,
      tool: call.name,
      params: prepared.params ?? call.arguments,
    }),
  );
  emit(
    agentEvent("tool_result", {
      callId: call.id,
      tool: call.name,
      ok: outcome.ok,
      summary: outcome.summary,
    }),
  );
  return outcome;
}

/** Answers calls without running them (duplicates of earlier calls, calls over the limit). */
export async function* answerWithoutRunning(
  turn: TurnContext,
  group: PreparedCall[],
  output: string,
  summary: string,
): AsyncGenerator<AgentEvent, void> {
  yield* finishGroup(
    turn,
    group,
    async (emit) => group.map((prepared) => announce(prepared, failed(output, summary), emit)),
    false,
  );
}

/** Runs a group in parallel (bounded by `maxParallelTools`); outcomes come back in call order. */
async function runGroup(
  turn: TurnContext,
  group: PreparedCall[],
  emit: Emit,
): Promise<CallOutcome[]> {
  const outcomes: CallOutcome[] = new Array(group.length);
  let next = 0;
  const worker = async () => {
    while (next < group.length) {
      const index = next;
      next += 1;
      outcomes[index] = await runCall(
        turn,
        group[index] as PreparedCall,
        group[index]?.input,
        emit,
      );
    }
  };
  const workers = Math.min(group.length, Math.max(1, turn.tunables.maxParallelTools));
  await Promise.all(Array.from({ length: workers }, worker));
  return outcomes;
}

function failed(output: string, summary: string): CallOutcome {
  return { ok: false, output, summary };
}

/** Runs one call with its own timeout and the turn's signal; every failure becomes a result. */
async function runCall(
  turn: TurnContext,
  prepared: PreparedCall,
  input: unknown,
  emit: Emit,
): Promise<CallOutcome> {
  const { call, tool } = prepared;
  emit(
    agentEvent("tool_start", {
      callId: call.id,
      tool: call.name,
      params: prepared.params ?? call.arguments,
    }),
  );
  const started = performance.now();
  const outcome = await (async (): Promise<CallOutcome> => {
    if (prepared.error !== undefined || !tool)
      return failed(
        prepared.error ?? "Error: unknown tool",
        prepared.errorSummary ?? "invalid call",
      );
    const timeoutMs = tool.timeoutMs ?? turn.tunables.toolTimeoutMs;
    const { controller, dispose } = linkedController(turn.signal);
    let finished = false;
    const timer = setTimeout(() => {
      const timeout = new Error(`timed out after ${timeoutMs} ms`);
      timeout.name = "TimeoutError";
      controller.abort(timeout);
    }, timeoutMs);
    try {
      const result = await raceAbort(
        Promise.resolve().then(() =>
          tool.execute(input, {
            signal: controller.signal,
            workspace: turn.workspace,
            callId: call.id,
            document: turn.document,
            onOutput: (chunk) => {
              if (finished || typeof chunk?.text !== "string") return;
              emit(
                agentEvent("tool_output", {
                  callId: call.id,
                  stream: chunk.stream === "stderr" ? "stderr" : "stdout",
                  text: chunk.text,
                }),
              );
            },
          }),
        ),
        controller.signal,
      );
      return normaliseResult(result, call.name);
    } catch (error) {
      if (turn.signal.aborted) throw error;
      if (controller.signal.aborted && isAbortError(error))
        return failed(
          `Error: ${call.name} timed out after ${timeoutMs} ms and was stopped.`,
          `timed out after ${timeoutMs} ms`,
        );
      if (error instanceof ToolError)
        return failed(`Error (${error.code}): ${error.message}`, error.message);
      const message = error instanceof Error ? error.message : String(error);
      if (controller.signal.aborted)
        return failed(
          `Error: ${call.name} timed out after ${timeoutMs} ms and was stopped.`,
          `timed out after ${timeoutMs} ms`,
        );
      turn.logger.warn({ tool: call.name, err: error }, "tool threw");
      return failed(`Error: ${call.name} failed: ${message}`, `failed: ${message}`);
    } finally {
      finished = true;
      clearTimeout(timer);
      dispose();
    }
  })();
  emit(
    agentEvent("tool_result", {
      callId: call.id,
      tool: call.name,
      ok: outcome.ok,
      summary: outcome.summary,
      durationMs: Math.round(performance.now() - started),
    }),
  );
  if (prepared.error !== undefined || !tool) return outcome;
  const context = await postToolUse(
    turn,
    { id: call.id, name: call.name, params: prepared.params },
    outcome,
    emit,
  );
  const added = [prepared.pending.hook?.context, context].filter(Boolean).join("\n");
  return { ...outcome, output: withHookContext(outcome.output, added) };
}

function normaliseResult(result: ToolResult | undefined, name: string): CallOutcome {
  if (!result || typeof result !== "object" || typeof result.output !== "string")
    return failed(`Error: ${name} returned no output.`, "returned no output");
  return {
    ok: result.ok !== false,
    output: result.output,
    summary: typeof result.summary === "string" ? result.summary : result.ok ? "done" : "failed",
  };
}

/** Results for calls of a response that is not run because every call repeats an earlier one. */
export const duplicateOutput =
  "Not run: this exact call was already made in this turn and nothing has changed since; its result is above.";
