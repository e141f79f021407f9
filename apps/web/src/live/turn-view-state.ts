// The shape of what the live panel shows of one turn (the turn-view reducer's state) and the
// limits it keeps; the reducer is turn-view.ts, its per-event steps turn-view-draft.ts.
import type {
  ApprovalRequest,
  ExitReason,
  FileChange,
  TokenUsage,
  TurnEvent,
  TurnEventData,
} from "@gadget/protocol";

/** Longest command output kept per tool call; older output is dropped from the front. */
export const MAX_TOOL_OUTPUT = 64 * 1024;
/**
 * The summary of a call the user declined (the engine's `declinedOutput`, @gadget/agent): the
 * engine announces it with tool_start and this failed tool_result, and nothing else says so.
 */
export const DECLINED_SUMMARY = "declined by the user";
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
  /**
   * The turn's drone is offline (`drone_lost`): since when, and when the turn is interrupted
   * unless it comes back (ms since the epoch); null once it is back or the turn ended.
   */
  droneLost: { since: number; until: number; droneName: string | null } | null;
  /** The provider rate-limited the turn: it calls again at `until` (ms); null once it answers. */
  quotaWait: { until: number; message: string } | null;
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
  /** The user's messages the turn took while it ran (steering), in order. */
  userMessages: TurnEventData<"user_message">[];
  /** The `/command` the prompt called, and what it became. */
  command: TurnEventData<"command"> | null;
  debug: { message: string; details?: unknown; seq: number }[];
  /** The project's hooks that ran (PreToolUse, PostToolUse, Stop, SessionStart), in order. */
  hooks: HookRun[];
}

/** One hook's run, as its `hook` event told it, with the pass it ran in. */
export type HookRun = TurnEventData<"hook"> & { seq: number; pass: number };
