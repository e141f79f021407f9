// The turn-view reducer: folds a turn's numbered events into what the live panel shows.
// Pure and order-safe: events apply strictly by seq, duplicates are ignored and early ones wait.
import type { ChatTurn, TurnEvent } from "@gadget/protocol";
import {
  appendOutput,
  appendThinking,
  applyStatus,
  type Draft,
  ownPending,
  resolveApprovalFor,
  resumed,
  startDraft,
  upsertTool,
} from "./turn-view-draft.ts";
import {
  type ApprovalItem,
  DECLINED_SUMMARY,
  MAX_DEBUG_MESSAGES,
  type TurnView,
} from "./turn-view-state.ts";

export {
  type ApprovalItem,
  type ApprovalState,
  DECLINED_SUMMARY,
  type HookRun,
  MAX_DEBUG_MESSAGES,
  MAX_TOOL_OUTPUT,
  type PassMark,
  type ThinkingBlock,
  type ToolActivity,
  type ToolStatus,
  type TurnView,
} from "./turn-view-state.ts";

/** The status message while approvals are open. */
const AWAITING_APPROVAL = "Waiting for your approval";

/** A turn before any event. */
export function emptyTurnView(): TurnView {
  return {
    lastSeq: 0,
    pending: new Map(),
    eventCount: 0,
    phase: "waiting",
    statusMessage: null,
    waitingForWorktree: false,
    droneLost: null,
    quotaWait: null,
    droneId: null,
    droneName: null,
    preEnrichment: null,
    pass: 0,
    model: null,
    escalations: 0,
    passes: [],
    firstEventAt: null,
    lastEventAt: null,
    thinking: [],
    draft: "",
    draftPass: 0,
    response: null,
    tools: [],
    document: null,
    cost: null,
    approvals: [],
    changes: null,
    verification: null,
    commit: null,
    delivery: null,
    done: null,
    errors: [],
    warnings: [],
    attemptStart: { draft: 0, thinking: 0, draftPass: 0 },
    adaptations: [],
    userMessages: [],
    command: null,
    debug: [],
    hooks: [],
  };
}

/**
 * Applies one event. Returns the same object when the event changes nothing (a duplicate,
 * or one already waiting), so React can skip the render.
 * @example view = applyEvent(view, message.event);
 */
export function applyEvent(view: TurnView, event: TurnEvent): TurnView {
  return applyEvents(view, [event]);
}

/**
 * Applies a batch of events in seq order, whatever order they come in. Events at or below
 * `lastSeq` are duplicates and ignored; events past a gap wait in `pending` until it fills.
 */
export function applyEvents(view: TurnView, events: readonly TurnEvent[]): TurnView {
  let draft: Draft | null = null;
  for (const event of events) {
    if (!Number.isInteger(event.seq) || event.seq <= 0) continue;
    const lastSeq = draft ? draft.lastSeq : view.lastSeq;
    const pending = draft ? draft.pending : view.pending;
    if (event.seq <= lastSeq || pending.has(event.seq)) continue;
    draft ??= startDraft(view);
    if (event.seq > draft.lastSeq + 1) {
      ownPending(draft).set(event.seq, event);
      continue;
    }
    applySafely(draft, event);
    let next = draft.pending.get(draft.lastSeq + 1);
    while (next) {
      ownPending(draft).delete(next.seq);
      applySafely(draft, next);
      next = draft.pending.get(draft.lastSeq + 1);
    }
  }
  if (!draft) return view;
  const { pendingOwned: _owned, ...result } = draft;
  return result;
}

/** The seq after which events are missing, when some arrived past a gap; null when none. */
export function gapAfter(view: TurnView): number | null {
  return view.pending.size > 0 ? view.lastSeq : null;
}

/** Whether the turn's events say it is waiting on the user to approve or deny something. */
export function pendingApprovals(view: TurnView): ApprovalItem[] {
  return view.approvals.filter((approval) => approval.state === "pending");
}

/** Whether the turn's cost is unknown: its provider has no prices (the cost says 0, not free). */
export function costUnknown(turn: ChatTurn, view: TurnView | undefined): boolean {
  return (view?.cost?.priced ?? turn.stats.priced) === false;
}

/** Total tokens reported so far (input + output; reasoning is part of output for most APIs). */
export function totalTokens(view: TurnView): number {
  if (!view.cost) return 0;
  return view.cost.tokens.input + view.cost.tokens.output;
}

/** Durations of each pass in ms; the last one runs to the end of the turn or to `now`. */
export function passDurations(view: TurnView, now: number): number[] {
  const end = view.done?.at ?? now;
  return view.passes.map((mark, index) => {
    const next = view.passes[index + 1];
    return Math.max(0, (next ? next.startedAt : end) - mark.startedAt);
  });
}

// ---------- internals ----------

function timeOf(event: TurnEvent): number {
  const at = event.at instanceof Date ? event.at.getTime() : Date.parse(String(event.at));
  return Number.isFinite(at) ? at : 0;
}

/** A malformed event is counted and noted, never allowed to stop the events after it. */
function applySafely(draft: Draft, event: TurnEvent): void {
  try {
    applyInOrder(draft, event);
  } catch (error) {
    draft.lastSeq = event.seq;
    draft.debug.push({
      message: `Step ${event.seq} (${String(event.type)}) could not be shown`,
      details: error instanceof Error ? error.message : String(error),
      seq: event.seq,
    });
  }
}

function applyInOrder(draft: Draft, event: TurnEvent): void {
  draft.lastSeq = event.seq;
  draft.eventCount += 1;
  const at = timeOf(event);
  draft.firstEventAt ??= at;
  draft.lastEventAt = at;
  if (draft.phase !== "finished" && event.type !== "queued" && event.type !== "dispatched") {
    // Any sign of work after dispatch means the drone is running the turn.
    if (draft.phase !== "awaiting_approval") draft.phase = "running";
  }

  if (event.type !== "status" && event.type !== "debug" && event.type !== "queued")
    draft.waitingForWorktree = false;
  // The provider answered again (or the turn moved on): the rate-limit wait is over.
  if (event.type !== "quota_wait" && event.type !== "debug") draft.quotaWait = null;

  switch (event.type) {
    case "queued":
      draft.droneLost = null; // Back in the queue: it waits for a drone, not for that one.
      if (draft.done) resumed(draft);
      if (draft.phase === "waiting") draft.phase = "queued";
      draft.statusMessage = event.data.message ?? "Waiting for a drone";
      break;
    case "dispatched":
      if (draft.done) resumed(draft);
      if (draft.phase === "waiting" || draft.phase === "queued") draft.phase = "dispatched";
      draft.droneId = event.data.droneId;
      draft.droneName = event.data.droneName ?? null;
      draft.statusMessage = `Sent to ${event.data.droneName ?? "a drone"}`;
      break;
    case "pre_enrichment":
      draft.preEnrichment = event.data.message;
      draft.statusMessage = event.data.message;
      break;
    case "status":
      applyStatus(draft, event.data, at);
      break;
    case "thinking":
      appendThinking(draft, event.data.text);
      break;
    case "token":
      // Each pass narrates on its own: without a break "…tested." and "Found it…" run together.
      if (draft.draft && draft.draftPass !== draft.pass && !/\n\s*$/.test(draft.draft))
        draft.draft += "\n\n";
      draft.draftPass = draft.pass;
      draft.draft += event.data.text;
      break;
    case "tool_start":
      resolveApprovalFor(draft, event.data.callId, "approved");
      upsertTool(draft, event.data.callId, (tool) => ({
        ...tool,
        tool: event.data.tool,
        params: event.data.params,
        status: "running",
        pass: draft.pass,
        startedAt: at,
      }));
      break;
    case "tool_output":
      upsertTool(draft, event.data.callId, (tool) => appendOutput(tool, event.data.text));
      break;
    case "tool_result": {
      const { callId, ok, summary, durationMs } = event.data;
      resolveApprovalFor(
        draft,
        callId,
        ok ? "approved" : summary === DECLINED_SUMMARY ? "denied" : "resolved",
      );
      upsertTool(draft, callId, (tool) => ({
        ...tool,
        tool: event.data.tool,
        status: ok ? "done" : "failed",
        summary,
        durationMs: durationMs ?? (tool.startedAt ? Math.max(0, at - tool.startedAt) : null),
      }));
      break;
    }
    case "document_update":
      draft.document = { ...event.data.sections };
      break;
    case "cost_update":
      draft.cost = {
        totalCost: event.data.totalCost,
        tokens: event.data.tokens,
        ...(event.data.priced === undefined ? {} : { priced: event.data.priced }),
      };
      break;
    case "approval":
      for (const request of event.data.approvals) {
        const index = draft.approvals.findIndex((item) => item.id === request.id);
        const item: ApprovalItem = {
          ...request,
          state: "pending",
          requestedSeq: event.seq,
          requestedPass: draft.pass,
        };
        if (index >= 0) draft.approvals[index] = item;
        else draft.approvals.push(item);
      }
      draft.phase = "awaiting_approval";
      draft.statusMessage = AWAITING_APPROVAL;
      break;
    case "response":
      draft.response = event.data.message;
      break;
    case "user_message":
      draft.userMessages.push({ ...event.data });
      break;
    case "command":
      draft.command = { ...event.data };
      break;
    case "changes":
      draft.changes = { ...event.data };
      break;
    case "verification":
      draft.verification = event.data;
      break;
    case "commit":
      draft.commit = event.data;
      break;
    case "delivery":
      draft.delivery = event.data;
      break;
    case "drone_lost": {
      const since = Date.parse(event.data.since) || at;
      draft.droneLost = {
        since,
        until: since + event.data.graceMs,
        droneName: event.data.droneName ?? draft.droneName,
      };
      break;
    }
    case "drone_back":
      draft.droneLost = null;
      break;
    case "quota_wait":
      draft.quotaWait = { until: Date.parse(event.data.until) || at, message: event.data.message };
      break;
    case "done":
      draft.droneLost = null;
      draft.done = { ...event.data, at };
      // Approvals still open when the turn ends can no longer be decided.
      if (event.data.reason !== "approval_needed") {
        draft.approvals = draft.approvals.map((item) =>
          item.state === "pending" ? { ...item, state: "resolved" } : item,
        );
        draft.phase = "finished";
        draft.statusMessage = null;
      }
      draft.tools = draft.tools.map((tool) =>
        tool.status === "running" && event.data.reason !== "approval_needed"
          ? { ...tool, status: "failed", summary: tool.summary ?? `Stopped: ${event.data.reason}` }
          : tool,
      );
      break;
    case "error":
      draft.errors.push({ ...event.data, seq: event.seq });
      break;
    case "provider_adapted":
      if (!draft.adaptations.some((known) => known.quirk === event.data.quirk))
        draft.adaptations = [...draft.adaptations, event.data];
      break;
    case "hook":
      draft.hooks = [...draft.hooks, { ...event.data, seq: event.seq, pass: draft.pass }];
      break;
    case "debug":
      draft.debug.push({ ...event.data, seq: event.seq });
      if (draft.debug.length > MAX_DEBUG_MESSAGES) draft.debug.shift();
      break;
  }
  if (draft.phase === "awaiting_approval" && !draft.approvals.some((a) => a.state === "pending")) {
    draft.phase = "running";
    // Decided: the line under the status should not go on asking (a long command may follow).
    if (draft.statusMessage === AWAITING_APPROVAL) draft.statusMessage = null;
  }
}
