// What a running turn is doing now (pass, model, current tool, approvals it waits on), folded from
// its events: for each stored batch on the way to the user's activity subscriptions, and from the
// latest stored events when the Activity page lists the turn.
import type { ActivityApproval, ActivityTool, TurnActivity, TurnEvent } from "@gadget/protocol";

/** An approval with the call it belongs to, so the call starting or ending clears it. */
interface PendingCall extends ActivityApproval {
  callId: string | null;
}

/** The fields of a TurnActivity a fold sets: absent means "not changed by these events". */
export type ActivityChange = Omit<TurnActivity, "turnId" | "sessionId">;

/** Events that never change what the Activity page shows (the bulk of a turn's events). */
const quiet = new Set(["token", "thinking", "tool_output", "debug", "cost_update"]);

/**
 * Folds `events` (in seq order) into what they change, or null when they change nothing the
 * Activity page shows (a batch of streamed text: the common case, skipped after one look at
 * each event's type).
 * @example activityOf(batch.events) // { seq: 42, at, tool: { name: "run_command", … } }
 */
export function activityOf(events: readonly TurnEvent[]): ActivityChange | null {
  let change: ActivityChange | null = null;
  let approvals: PendingCall[] | null = null;
  const clearCall = (callId: string) => {
    if (!approvals) return;
    approvals = approvals.filter(
      (approval) => approval.callId !== null && approval.callId !== callId,
    );
  };
  for (const event of events) {
    if (quiet.has(event.type)) continue;
    const before = change;
    const next: ActivityChange = change ?? { seq: event.seq, at: event.at };
    change = next;
    next.seq = event.seq;
    next.at = event.at;
    switch (event.type) {
      case "queued":
        next.tool = null;
        approvals = [];
        break;
      case "dispatched":
        if (event.data.droneName) next.droneName = event.data.droneName;
        next.tool = null;
        approvals = [];
        break;
      case "status":
        if (event.data.pass !== undefined) next.pass = event.data.pass;
        if (event.data.model !== undefined) next.model = event.data.model;
        break;
      case "tool_start": {
        const tool: ActivityTool = {
          name: event.data.tool,
          callId: event.data.callId,
          startedAt: event.at,
        };
        next.tool = tool;
        clearCall(event.data.callId);
        break;
      }
      case "tool_result":
        if (!next.tool || next.tool.callId === event.data.callId) next.tool = null;
        clearCall(event.data.callId);
        break;
      case "approval":
        approvals = [
          ...(approvals ?? []),
          ...event.data.approvals.map((approval) => ({
            id: approval.id,
            tool: approval.tool,
            description: approval.description,
            callId: approval.callId ?? null,
          })),
        ];
        break;
      case "drone_lost": {
        const since = new Date(event.data.since);
        next.droneOffline = { since, until: new Date(since.getTime() + event.data.graceMs) };
        break;
      }
      case "drone_back":
        next.droneOffline = null;
        break;
      case "done":
        next.droneOffline = null;
        next.tool = null;
        approvals = [];
        break;
      default:
        // The answer, the changes, an error…: what the turn record says (turn_updates).
        if (!before) change = null;
        break;
    }
  }
  if (change && approvals) {
    change.approvals = (approvals as PendingCall[]).map(({ id, tool, description }) => ({
      id,
      tool,
      description,
    }));
  }
  return change;
}
