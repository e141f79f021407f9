// How events change a ChatTurn: status, stats, response, changes, delivery, pending approvals. Pure, so
// ingestion (drone events) and the server's own lifecycle events share one rule set.
import type { ChatTurnDocument, PendingApproval } from "@gadget/db";
import type {
  AgentEvent,
  ExitReason,
  FileChange,
  TurnDelivery,
  TurnStats,
  TurnStatus,
} from "@gadget/protocol";
import { formatDuration, isFinalTurnStatus } from "@gadget/protocol";

/** The part of a ChatTurn that events change. */
export interface TurnState {
  status: TurnStatus;
  stats: TurnStats;
  response: string | null;
  error: { code: string; message: string } | null;
  exitReason: ExitReason | null;
  changes: FileChange[];
  branch: string | null;
  commit: string | null;
  delivery: TurnDelivery | null;
  pendingApprovals: PendingApproval[];
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  leaseExpiresAt: Date | null;
  /** What the turn waits on (its drone, a provider's rate limit), or null. */
  waiting: ChatTurnDocument["waiting"];
  /** The provider's last rate-limit wait, kept for a resumed turn (not cleared by other events). */
  quotaWait: ChatTurnDocument["quotaWait"];
}

/** Why a turn that ended `interrupted` without an error of its own stopped, in words. */
function interruptedBecause(reason: ExitReason): string {
  return reason === "drone_shutdown"
    ? "The drone running this turn shut down; everything received so far is kept"
    : "The turn was interrupted before it finished; everything received so far is kept";
}

/** The status a turn ends in for each reason its loop stopped. */
export function finalStatusFor(reason: ExitReason): TurnStatus {
  switch (reason) {
    case "cancelled":
      return "cancelled";
    case "interrupted":
    case "drone_shutdown":
      return "interrupted";
    case "error":
    case "quota_wait_exceeded":
      return "failed";
    default:
      // Limits and the other stops still end with a synthesised answer (synthesis: docs/architecture.md, "The engine").
      return "completed";
  }
}

/** Applies `events` in order to a copy of `state`. A final status never changes again. */
export function applyEvents(state: TurnState, events: readonly AgentEvent[], now: Date): TurnState {
  const next: TurnState = {
    ...state,
    stats: { ...state.stats },
    pendingApprovals: [...state.pendingApprovals],
  };
  for (const event of events) applyEvent(next, event, now);
  if (!isFinalTurnStatus(next.status) && next.startedAt) {
    next.stats.durationMs = now.getTime() - next.startedAt.getTime();
  }
  return next;
}

function applyEvent(state: TurnState, event: AgentEvent, now: Date): void {
  if (isFinalTurnStatus(state.status) && event.type !== "done") return;
  const settle = () => {
    if (state.status === "dispatched") state.status = "processing";
  };
  // A rate-limit wait ends with the provider's next answer (or the turn's end).
  if (state.waiting?.reason === "provider_rate_limit" && event.type !== "debug")
    state.waiting = null;
  switch (event.type) {
    case "quota_wait":
      settle();
      state.waiting = {
        reason: "provider_rate_limit",
        since: new Date(event.data.since),
        until: new Date(event.data.until),
      };
      state.quotaWait = { since: new Date(event.data.since), until: new Date(event.data.until) };
      return;
    case "queued":
      return;
    case "dispatched":
      state.status = "dispatched";
      return;
    case "tool_start":
      state.stats.toolCallCount += 1;
      clearApprovals(state, event.data.callId);
      settle();
      return;
    case "tool_result":
      clearApprovals(state, event.data.callId);
      settle();
      return;
    case "cost_update":
      state.stats.cost = event.data.totalCost;
      state.stats.inputTokens = event.data.tokens.input;
      state.stats.responseTokens = event.data.tokens.output;
      state.stats.thinkingTokenCount = event.data.tokens.reasoning;
      if (event.data.priced !== undefined) state.stats.priced = event.data.priced;
      settle();
      return;
    case "status":
      if (event.data.pass !== undefined) {
        state.stats.passes = Math.max(state.stats.passes, event.data.pass);
      }
      settle();
      return;
    case "approval":
      for (const approval of event.data.approvals) {
        const budget = approval.kind === "budget" ? budgetOf(approval.params) : null;
        state.pendingApprovals.push({
          id: approval.id,
          callId: approval.callId ?? null,
          ...(budget ? { budget } : {}),
        });
      }
      state.status = "awaiting_approval";
      return;
    case "response":
      state.response = event.data.message;
      settle();
      return;
    case "changes":
      state.changes = event.data.files;
      settle();
      return;
    case "commit":
      state.branch = event.data.branch;
      state.commit = event.data.commit;
      settle();
      return;
    case "delivery":
      state.delivery = {
        branch: event.data.branch,
        commit: event.data.commit,
        pushedAt: event.data.pushed ? now : null,
        pullRequestUrl: event.data.pullRequestUrl ?? null,
        error: event.data.error ?? null,
      };
      settle();
      return;
    case "error":
      state.error = { code: event.data.code, message: event.data.message };
      settle();
      return;
    case "done": {
      if (isFinalTurnStatus(state.status)) return;
      state.status = finalStatusFor(event.data.reason);
      state.exitReason = event.data.reason;
      // An interrupted turn always says why, whichever path ended it.
      if (state.status === "interrupted" && !state.error) {
        state.error = { code: "interrupted", message: interruptedBecause(event.data.reason) };
      }
      state.stats.passes = event.data.passes;
      state.stats.cost = event.data.totalCost;
      state.pendingApprovals = [];
      state.finishedAt = now;
      state.leaseExpiresAt = null;
      state.stats.durationMs = now.getTime() - (state.startedAt ?? state.createdAt).getTime();
      state.stats.durationLabel = formatDuration(state.stats.durationMs);
      return;
    }
    default:
      settle();
  }
}

/** Removes the approval of `callId` (and any without a call id); back to processing when none is left. */
export function clearApprovals(state: TurnState, callId: string | null): void {
  const before = state.pendingApprovals.length;
  if (before === 0) return;
  state.pendingApprovals = state.pendingApprovals.filter(
    (approval) => approval.callId !== null && approval.callId !== callId,
  );
  if (state.pendingApprovals.length === 0 && state.status === "awaiting_approval") {
    state.status = "processing";
  }
}

/** Removes one approval by id (after its decision reached the drone). */
export function resolveApproval(state: TurnState, approvalId: string): TurnState {
  const next = {
    ...state,
    pendingApprovals: state.pendingApprovals.filter((a) => a.id !== approvalId),
  };
  if (next.pendingApprovals.length === 0 && next.status === "awaiting_approval") {
    next.status = "processing";
  }
  return next;
}

/** The limit a `budget` approval asks about and how much of it was used. */
function budgetOf(params: unknown): { limit: string; used: number } | null {
  const { limit, used } = (params ?? {}) as { limit?: unknown; used?: unknown };
  return typeof limit === "string" && typeof used === "number" ? { limit, used } : null;
}
