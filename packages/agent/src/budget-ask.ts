// A budget that asks: with `limits.onReach: "ask"`, a turn reaching `maxPasses`, `maxToolCalls`,
// `tokenBudget` or `costBudget` pauses like an approval (kind `budget`) instead of ending. The
// user extends the limit (`approve` with `input: {extendBy}`, or by as much again without one) and
// the turn goes on, or declines, or says nothing for `askTimeoutMs`: then the turn ends with the
// synthesis as it would have.
import {
  type AgentEvent,
  type ApprovalRequest,
  agentEvent,
  type TurnLimits,
} from "@gadget/protocol";
import { raceAbort, sleep } from "./abort.ts";
import type { ExitCheck } from "./exit-conditions.ts";
import type { TurnContext } from "./turn-context.ts";
import { tokensUsed } from "./usage.ts";

const defaultAskTimeoutMs = 600_000;

type BudgetLimit = "maxPasses" | "maxToolCalls" | "tokenBudget" | "costBudget";

const limitOf: Partial<Record<ExitCheck["reason"], BudgetLimit>> = {
  max_passes: "maxPasses",
  max_tool_calls: "maxToolCalls",
  token_budget: "tokenBudget",
  budget_exceeded: "costBudget",
};

function usedOf(turn: TurnContext, limit: BudgetLimit): number {
  const { state } = turn;
  switch (limit) {
    case "maxPasses":
      return state.passCount;
    case "maxToolCalls":
      return state.toolCallCount;
    case "tokenBudget":
      return tokensUsed(state.tokens);
    case "costBudget":
      return state.totalCost;
  }
}

/** The positive number `input.extendBy`, if the decision carries one. */
function extensionOf(input: unknown): number | null {
  const extendBy = (input as { extendBy?: unknown } | null | undefined)?.extendBy;
  return typeof extendBy === "number" && Number.isFinite(extendBy) && extendBy > 0
    ? extendBy
    : null;
}

/**
 * Asks whether to extend the limit `exit` reached; true when it was extended (the turn goes on).
 * False at once unless the turn's limits say `ask` and a handler can hear the question.
 */
export async function* askToExtend(
  turn: TurnContext,
  exit: ExitCheck,
): AsyncGenerator<AgentEvent, boolean> {
  const limit = limitOf[exit.reason];
  const handler = turn.options.onApproval;
  if (!limit || turn.limits.onReach !== "ask" || !handler) return false;
  const value = turn.limits[limit] as number;
  const used = usedOf(turn, limit);
  const request: ApprovalRequest = {
    id: `budget-${turn.state.passCount}-${limit}`,
    tool: "budget",
    kind: "budget",
    params: { limit, used, value },
    description: `The turn reached its limit: ${exit.detail}. Extend it to go on, or let it finish with an answer from what it gathered.`,
  };
  turn.state.pendingApprovals = [request];
  yield agentEvent("approval", { approvals: [request] });
  const timeoutMs = turn.limits.askTimeoutMs ?? defaultAskTimeoutMs;
  const nobody = sleep(timeoutMs, turn.signal).then(() => null);
  const decision = await raceAbort(
    Promise.race([handler(request, { signal: turn.signal }), nobody]),
    turn.signal,
  );
  turn.state.pendingApprovals = [];
  // Approved without an amount (a plain Approve button): as much again as the limit was.
  const extendBy = decision?.approve ? (extensionOf(decision.input) ?? value) : null;
  if (extendBy === null) {
    yield agentEvent("status", {
      message: decision
        ? "The limit was not extended"
        : `Nobody answered within ${Math.round(timeoutMs / 1000)} s; the limit stands`,
      pass: turn.state.passCount,
      phase: "budget",
    });
    return false;
  }
  const extended = { ...turn.limits, [limit]: value + extendBy } as TurnLimits;
  Object.assign(turn.limits, extended);
  yield agentEvent("status", {
    message: `The limit ${limit} was extended by ${extendBy} to ${value + extendBy}`,
    pass: turn.state.passCount,
    phase: "budget",
  });
  return true;
}
