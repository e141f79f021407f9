// Phase 3, model escalation (docs/architecture.md, "The engine"): after consecutive low-progress passes, switch once to
// the provider's stronger model and give it a fresh chance.
import { type AgentEvent, agentEvent } from "@gadget/protocol";
import type { ProgressMark } from "./state.ts";
import type { TurnContext } from "./turn-context.ts";

/** Passes remembered in `confidenceHistory`. */
const historyLength = 10;

/** Records whether the pass that just ended moved the turn forward. */
export function recordProgress(turn: TurnContext, mark: ProgressMark): void {
  const history = turn.state.confidenceHistory;
  history.push(mark);
  if (history.length > historyLength) history.shift();
}

/** Switches to the escalation model when due; returns the `status` event announcing it. */
export function maybeEscalate(turn: TurnContext): AgentEvent | undefined {
  const { state, provider } = turn;
  const target = provider.escalationModelId;
  if (!target || state.escalated || state.activeModel === target) return undefined;
  const needed = turn.tunables.escalateAfterLowPasses;
  const recent = state.confidenceHistory.slice(-needed);
  if (recent.length < needed || recent.some((mark) => mark !== "low")) return undefined;
  const previous = state.activeModel;
  state.activeModel = target;
  state.escalated = true;
  // The stronger model gets its own chance before a loop signal ends the turn.
  state.stuckSignal = null;
  state.emptyResponses = 0;
  turn.logger.info({ from: previous, to: target }, "escalating model");
  return agentEvent("status", {
    message: `Escalating to a stronger model: ${target} (${previous} made no progress in ${needed} passes)`,
    pass: state.passCount,
    model: target,
    phase: "escalation",
  });
}
