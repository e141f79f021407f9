// The turn-view reducer's working copy and its steps: one batch of events changes a draft (the
// lists copied once), and these helpers apply a status, a thinking chunk, a tool's output or an
// approval's outcome to it.
import { type TurnEvent, type TurnEventData, WAITING_FOR_WORKTREE } from "@gadget/protocol";
import {
  type ApprovalState,
  MAX_TOOL_OUTPUT,
  type ToolActivity,
  type TurnView,
} from "./turn-view-state.ts";

/** The opening of the drone's status while another turn of the session holds its worktree. */
const WORKTREE_WAIT = WAITING_FOR_WORKTREE.slice(0, WAITING_FOR_WORKTREE.indexOf(":"));

/** A writable copy made once per batch, so a batch of 5,000 events copies the lists once. */
export type Draft = Omit<TurnView, "pending"> & {
  pending: ReadonlyMap<number, TurnEvent>;
  /** Whether `pending` is this draft's own copy (copied only when it must change). */
  pendingOwned?: boolean;
};

export function ownPending(draft: Draft): Map<number, TurnEvent> {
  if (!draft.pendingOwned) {
    draft.pending = new Map(draft.pending);
    draft.pendingOwned = true;
  }
  return draft.pending as Map<number, TurnEvent>;
}

export function startDraft(view: TurnView): Draft {
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

export function applyStatus(draft: Draft, data: TurnEventData<"status">, at: number): void {
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
export function resumed(draft: Draft): void {
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

export function appendThinking(draft: Draft, text: string): void {
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

export function upsertTool(
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

export function appendOutput(tool: ToolActivity, text: string): ToolActivity {
  const output = tool.output + text;
  if (output.length <= MAX_TOOL_OUTPUT) return { ...tool, output };
  return { ...tool, output: output.slice(output.length - MAX_TOOL_OUTPUT), outputTruncated: true };
}

export function resolveApprovalFor(draft: Draft, callId: string, state: ApprovalState): void {
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
