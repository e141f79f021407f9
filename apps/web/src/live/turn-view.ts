// The turn-view reducer: folds a turn's numbered events into what the live panel shows.
// Pure and order-safe: events apply strictly by seq, duplicates are ignored and early ones wait.
import {
  type ApprovalRequest,
  type ChatTurn,
  type ExitReason,
  type FileChange,
  type TokenUsage,
  type TurnEvent,
  type TurnEventData,
  WAITING_FOR_WORKTREE,
} from "@gadget/protocol";

/** Longest command output kept per tool call; older output is dropped from the front. */
export const MAX_TOOL_OUTPUT = 64 * 1024;
/** The status message while approvals are open. */
const AWAITING_APPROVAL = "Waiting for your approval";
/**
 * The summary of a call the user declined (the engine's `declinedOutput`, @gadget/agent): the
 * engine announces it with tool_start and this failed tool_result, and nothing else says so.
 */
export const DECLINED_SUMMARY = "declined by the user";
/** The opening of the drone's status while another turn of the session holds its worktree. */
const WORKTREE_WAIT = WAITING_FOR_WORKTREE.slice(0, WAITING_FOR_WORKTREE.indexOf(":"));
/** Debug messages kept per turn (they are for developers; the newest matter). */
export const MAX_DEBUG_MESSAGES = 200;

export type ToolStatus = "running" | "done" | "failed";

/** One tool call as the activity list shows it. */
export interface ToolActivity {
  callId: string;
  tool: string;
  params: unknown;
  status: ToolStatus;
  summary: string | null;
  /** Streamed stdout and stderr, interleaved as they arrived (the tail when long). */
  output: string;
  outputTruncated: boolean;
  pass: number;
  startedAt: number;
  durationMs: number | null;
}

export type ApprovalState = "pending" | "approved" | "denied" | "resolved";

/** An approval request and what became of it, as far as the events tell. */
export interface ApprovalItem extends ApprovalRequest {
  state: ApprovalState;
  requestedSeq: number;
  requestedPass: number;
}

/** When a pass started, for the status line and the time-per-pass chart. */
export interface PassMark {
  pass: number;
  startedAt: number;
  model: string | null;
}

export interface ThinkingBlock {
  pass: number;
  text: string;
}

/** Everything the live panel of one turn shows, derived from its events. */
export interface TurnView {
  /** The highest seq applied; every event up to it has been applied exactly once. */
  lastSeq: number;
  /** Events that arrived ahead of a gap, keyed by seq, applied once the gap fills. */
  pending: ReadonlyMap<number, TurnEvent>;
  eventCount: number;
  phase: "waiting" | "queued" | "dispatched" | "running" | "awaiting_approval" | "finished";
  statusMessage: string | null;
  /** The drone waits while another turn of the session works in the session's worktree. */
  waitingForWorktree: boolean;
  droneId: string | null;
  droneName: string | null;
  preEnrichment: string | null;
  pass: number;
  model: string | null;
  /** Times the model changed during the turn (an escalation to a stronger model, and back). */
  escalations: number;
  passes: PassMark[];
  firstEventAt: number | null;
  lastEventAt: number | null;
  thinking: ThinkingBlock[];
  /**
   * Response text as it streams (`token` deltas); `response` replaces it when it arrives. Each
   * pass's narration starts a new paragraph.
   */
  draft: string;
  /** The pass whose text `draft` ends with (0 before any). */
  draftPass: number;
  response: string | null;
  tools: ToolActivity[];
  document: Record<string, string> | null;
  /** `priced: false` when the provider has no prices (the cost is unknown, not zero). */
  cost: { totalCost: number; tokens: TokenUsage; priced?: boolean } | null;
  approvals: ApprovalItem[];
  changes: { files: FileChange[]; diff: string; truncated: boolean } | null;
  verification: TurnEventData<"verification"> | null;
  /** The session's branch as the drone pushed it after the turn (or why it could not). */
  commit: TurnEventData<"commit"> | null;
  delivery: TurnEventData<"delivery"> | null;
  done: { reason: ExitReason; passes: number; totalCost: number; at: number } | null;
  errors: { code: string; message: string; seq: number }[];
  /** Status events the drone marked as warnings (e.g. it runs commands without a sandbox). */
  warnings: string[];
  /**
   * Where the current model call's streamed text and thinking began: a retried call streams its
   * answer again, so what the failed attempt showed is cut back to here.
   */
  attemptStart: { draft: number; thinking: number; draftPass: number };
  /** Requests the drone changed after the provider refused them (one per quirk). */
  adaptations: TurnEventData<"provider_adapted">[];
  debug: { message: string; details?: unknown; seq: number }[];
}

/** A turn before any event. */
export function emptyTurnView(): TurnView {
  return {
    lastSeq: 0,
    pending: new Map(),
    eventCount: 0,
    phase: "waiting",
    statusMessage: null,
    waitingForWorktree: false,
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
    debug: [],
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

/** A writable copy made once per batch, so a batch of 5,000 events copies the lists once. */
type Draft = Omit<TurnView, "pending"> & {
  pending: ReadonlyMap<number, TurnEvent>;
  /** Whether `pending` is this draft's own copy (copied only when it must change). */
  pendingOwned?: boolean;
};

function ownPending(draft: Draft): Map<number, TurnEvent> {
  if (!draft.pendingOwned) {
    draft.pending = new Map(draft.pending);
    draft.pendingOwned = true;
  }
  return draft.pending as Map<number, TurnEvent>;
}

function startDraft(view: TurnView): Draft {
  return {
    ...view,
    pendingOwned: false,
    passes: view.passes.slice(),
    thinking: view.thinking.slice(),
    tools: view.tools.slice(),
    approvals: view.approvals.slice(),
    errors: view.errors.slice(),
    debug: view.debug.slice(),
  };
}

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

  switch (event.type) {
    case "queued":
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
    case "done":
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

function applyStatus(draft: Draft, data: TurnEventData<"status">, at: number): void {
  if (data.level === "warning") {
    if (!draft.warnings.includes(data.message)) draft.warnings = [...draft.warnings, data.message];
    return;
  }
  draft.statusMessage = data.message;
  draft.waitingForWorktree = data.phase === "workspace" && data.message.startsWith(WORKTREE_WAIT);
  if (data.phase === "retry") dropFailedAttempt(draft);
  // A new pass after an approval pause means every decision was made and the loop goes on.
  if (data.pass !== undefined) {
    const pass = data.pass;
    if (draft.approvals.some((item) => item.state === "pending" && pass > item.requestedPass)) {
      draft.approvals = draft.approvals.map((item) =>
        item.state === "pending" && pass > item.requestedPass
          ? { ...item, state: "resolved" }
          : item,
      );
    }
  }
  if (data.model && data.model !== draft.model) {
    if (draft.model !== null) draft.escalations += 1;
    draft.model = data.model;
  }
  if (data.pass !== undefined && data.pass > draft.pass) {
    draft.pass = data.pass;
    draft.passes.push({ pass: data.pass, startedAt: at, model: data.model ?? draft.model });
  }
  if (data.phase === "model")
    draft.attemptStart = { draft: draft.draft.length, thinking: 0, draftPass: draft.draftPass };
}

/**
 * A finished turn was resumed (a new `queued` or `dispatched` after its `done`): it runs again,
 * and the errors that ended it before are history, not its state.
 */
function resumed(draft: Draft): void {
  draft.done = null;
  draft.phase = "waiting";
  draft.errors = [];
}

/** A model call failed mid-stream and is sent again: what it had streamed is not the answer. */
function dropFailedAttempt(draft: Draft): void {
  draft.draft = draft.draft.slice(0, draft.attemptStart.draft);
  draft.draftPass = draft.attemptStart.draftPass;
  const last = draft.thinking[draft.thinking.length - 1];
  if (last && last.pass === draft.pass) {
    const kept = last.text.slice(0, draft.attemptStart.thinking);
    if (kept) draft.thinking[draft.thinking.length - 1] = { pass: last.pass, text: kept };
    else draft.thinking.pop();
  }
}

function appendThinking(draft: Draft, text: string): void {
  const last = draft.thinking[draft.thinking.length - 1];
  if (last && last.pass === draft.pass) {
    draft.thinking[draft.thinking.length - 1] = { pass: last.pass, text: last.text + text };
  } else {
    draft.thinking.push({ pass: draft.pass, text });
  }
}

/** Finds a tool by call id from the end (live events concern the newest calls). */
function findTool(tools: ToolActivity[], callId: string): number {
  for (let index = tools.length - 1; index >= 0; index -= 1) {
    if (tools[index]?.callId === callId) return index;
  }
  return -1;
}

function upsertTool(
  draft: Draft,
  callId: string,
  update: (tool: ToolActivity) => ToolActivity,
): void {
  const index = findTool(draft.tools, callId);
  if (index >= 0) {
    draft.tools[index] = update(draft.tools[index]!);
    return;
  }
  // Output or a result without its start still deserves a row.
  draft.tools.push(
    update({
      callId,
      tool: "tool",
      params: undefined,
      status: "running",
      summary: null,
      output: "",
      outputTruncated: false,
      pass: draft.pass,
      startedAt: draft.lastEventAt ?? 0,
      durationMs: null,
    }),
  );
}

function appendOutput(tool: ToolActivity, text: string): ToolActivity {
  const output = tool.output + text;
  if (output.length <= MAX_TOOL_OUTPUT) return { ...tool, output };
  return { ...tool, output: output.slice(output.length - MAX_TOOL_OUTPUT), outputTruncated: true };
}

function resolveApprovalFor(draft: Draft, callId: string, state: ApprovalState): void {
  // A declined call is announced with tool_start too: its result turns "approved" into "denied".
  const index = draft.approvals.findIndex(
    (item) =>
      item.callId === callId &&
      (item.state === "pending" ||
        item.state === "resolved" ||
        (state === "denied" && item.state === "approved")),
  );
  if (index < 0) return;
  const item = draft.approvals[index]!;
  if (item.state === "resolved" && state === "resolved") return;
  draft.approvals[index] = { ...item, state };
}
