// What every phase of a turn is handed (turn-runner.ts): its work order, where its events go and
// its logger. A phase reports through `emit`; it never calls back into the runner.
import type { EngineLogger } from "@gadget/agent";
import type { AgentEvent, IWorkOrder } from "@gadget/protocol";

/** Reports one event of the turn: journaled, sent to the server, shown on the progress line. */
export type Emit = (event: AgentEvent) => void;

export interface TurnScope {
  order: IWorkOrder;
  emit: Emit;
  logger: EngineLogger;
}

/** The session whose worktree the turn works in; a work order without one is a session of its own. */
export function turnSessionId(order: IWorkOrder): string {
  return order.session._id ?? order.turnId;
}
