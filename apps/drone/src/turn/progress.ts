// What a person watching the drone's terminal sees of a turn, kept up to date from its events.
import type { AgentEvent, IWorkOrder } from "@gadget/protocol";

/** What a person watching the drone's terminal sees of a turn. */
export interface TurnProgress {
  turnId: string;
  project: string;
  pass: number;
  tool: string | null;
  tokens: number;
  cost: number;
  startedAt: number;
  phase: string;
  /** The latest status message (e.g. "Receiving objects 45%"). */
  detail?: string;
}

/** A turn's progress before its first event. */
export function startProgress(order: IWorkOrder, now = Date.now()): TurnProgress {
  return {
    turnId: order.turnId,
    project: order.project.name,
    pass: 0,
    tool: null,
    tokens: 0,
    cost: 0,
    startedAt: now,
    phase: "starting",
  };
}

/** Applies an event to `progress`; true when it changed what the terminal shows. */
export function trackProgress(progress: TurnProgress, event: AgentEvent): boolean {
  switch (event.type) {
    case "status":
      if (event.data.pass !== undefined) progress.pass = event.data.pass;
      if (event.data.phase) progress.phase = event.data.phase;
      progress.detail = event.data.message;
      return true;
    case "tool_start":
      progress.tool = event.data.tool;
      progress.phase = "tool";
      return true;
    case "tool_result":
      progress.tool = null;
      progress.phase = "thinking";
      return true;
    case "cost_update":
      progress.tokens = event.data.tokens.input + event.data.tokens.output;
      progress.cost = event.data.totalCost;
      return true;
    default:
      return false;
  }
}
