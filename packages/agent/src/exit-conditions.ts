// The exit conditions (docs/architecture.md, "Exit conditions"), checked at the top of every pass: small named predicates,
// in priority order (vercel/ai stop-condition.ts). Approval is a pause, decided where calls run.
import type { ExitReason } from "@gadget/protocol";
import type { TurnContext } from "./turn-context.ts";
import { tokensUsed } from "./usage.ts";

export interface ExitCheck {
  reason: ExitReason;
  detail: string;
}

export type ExitCondition = (turn: TurnContext) => ExitCheck | undefined;

export const cancelled: ExitCondition = (turn) =>
  turn.signal.aborted ? { reason: "cancelled", detail: "the turn was cancelled" } : undefined;

export const maxPassesReached: ExitCondition = ({ limits, state }) =>
  limits.maxPasses !== undefined && state.passCount >= limits.maxPasses
    ? { reason: "max_passes", detail: `the limit of ${limits.maxPasses} passes was reached` }
    : undefined;

export const maxToolCallsReached: ExitCondition = ({ limits, state }) =>
  limits.maxToolCalls !== undefined && state.toolCallCount >= limits.maxToolCalls
    ? {
        reason: "max_tool_calls",
        detail: `the limit of ${limits.maxToolCalls} tool calls was reached`,
      }
    : undefined;

export const tokenBudgetUsed: ExitCondition = ({ limits, state }) =>
  limits.tokenBudget !== undefined && tokensUsed(state.tokens) >= limits.tokenBudget
    ? { reason: "token_budget", detail: `the token budget of ${limits.tokenBudget} was used up` }
    : undefined;

export const costBudgetUsed: ExitCondition = ({ limits, state }) =>
  limits.costBudget !== undefined && state.totalCost >= limits.costBudget
    ? { reason: "budget_exceeded", detail: `the cost budget of $${limits.costBudget} was used up` }
    : undefined;

export const stuck: ExitCondition = ({ state }) =>
  state.stuckSignal?.reason === "stuck"
    ? { reason: "stuck", detail: state.stuckSignal.detail }
    : undefined;

export const allToolsDuplicate: ExitCondition = ({ state }) =>
  state.stuckSignal?.reason === "all_tools_duplicate"
    ? { reason: "all_tools_duplicate", detail: state.stuckSignal.detail }
    : undefined;

/** In the order they are checked. */
export const exitConditions: readonly ExitCondition[] = [
  cancelled,
  maxPassesReached,
  maxToolCallsReached,
  tokenBudgetUsed,
  costBudgetUsed,
  stuck,
  allToolsDuplicate,
];

/** The first exit condition that holds, if any. */
export function checkExitConditions(turn: TurnContext): ExitCheck | undefined {
  for (const condition of exitConditions) {
    const exit = condition(turn);
    if (exit) return exit;
  }
  return undefined;
}
