// One turn of the conversation: the prompt, the live panel (status line, thinking, tool activity,
// living document, cost against budget, approvals, Stop / Resume, Changes) and the answer.
import type { ChatTurn, ExitReason, TurnRevertAnswer, TurnStatus } from "@gadget/protocol";
import { isFinalTurnStatus } from "@gadget/protocol";
import { useEffect, useState } from "react";
import { DiffView } from "../components/diff-view.tsx";
import { ErrorNote } from "../components/error-note.tsx";
import { Markdown } from "../components/markdown.tsx";
import { formatCost, formatElapsed, formatTokens, timeOf } from "../lib/format.ts";
import { describeQuirk } from "../lib/quirks.ts";
import type { TurnSnapshot } from "../live/turn-store.ts";
import { type ApprovalItem, costUnknown, type TurnView, totalTokens } from "../live/turn-view.ts";
import { ApprovalCard } from "./approval-card.tsx";
import { RevertControl } from "./revert-control.tsx";
import { ToolActivityList } from "./tool-activity.tsx";

export const statusWords: Record<TurnStatus, string> = {
  queued: "Waiting for a drone",
  dispatched: "Starting",
  processing: "Working",
  awaiting_approval: "Waiting for your approval",
  completed: "Completed",
  failed: "Failed",
  cancelled: "Stopped",
  interrupted: "Interrupted",
};

/**
 * Why a guard stopped a turn (repeated calls, a limit), in words: such a turn ends "completed"
 * with a summary, but it did not finish the work as an answered turn did.
 */
export const guardWords: Partial<Record<ExitReason, string>> = {
  all_tools_duplicate: "it repeated the same tool calls",
  stuck: "it was going in circles",
  max_passes: "it reached the pass limit",
  max_tool_calls: "it reached the tool-call limit",
  token_budget: "it used up its token budget",
  budget_exceeded: "it used up its cost budget",
};

/** The guard that stopped the turn, when one did. */
export function guardOf(turn: ChatTurn, view: TurnView): ExitReason | null {
  if (turn.status !== "completed") return null;
  const reason = turn.exitReason ?? view.done?.reason ?? null;
  return reason && guardWords[reason] ? reason : null;
}

/** What the status line says first: the guard, the wait for the worktree, else the status. */
export function statusWordOf(turn: ChatTurn, view: TurnView): string {
  const guard = guardOf(turn, view);
  if (guard) return `Stopped by a guard: ${guardWords[guard]}`;
  if (view.waitingForWorktree && !isFinalTurnStatus(turn.status))
    return "Waiting for the session's worktree";
  return statusWords[turn.status];
}

/** A turn error's title: what went wrong, before the cause in the provider's or git's words. */
export function errorTitle(code: string): string {
  if (code === "clone_failed") return "Could not clone the project";
  if (code === "provider_unavailable") return "The model provider could not be reached";
  if (code === "provider_auth") return "The model provider refused the API key";
  if (code === "provider_model_not_found") return "The model provider does not know this model";
  if (code.startsWith("provider_")) return "The model provider refused the request";
  if (code.startsWith("workspace") || code.startsWith("worktree"))
    return "The drone could not prepare the workspace";
  return "The turn failed";
}

const exitWords: Record<string, string> = {
  completed: "answered",
  max_passes: "stopped at the pass limit",
  max_tool_calls: "stopped at the tool-call limit",
  token_budget: "stopped at the token budget",
  budget_exceeded: "stopped at the cost budget",
  approval_needed: "waiting for approval",
  stuck: "stopped: it was going in circles",
  all_tools_duplicate: "stopped: it repeated the same calls",
  cancelled: "stopped by you",
  interrupted: "interrupted: its drone went away",
  error: "ended by an error",
};

export interface TurnActions {
  cancel(): Promise<void>;
  resume(): Promise<void>;
  /** `alwaysAllow`: approve, and let the session run this exact command without asking again. */
  decide(approvalId: string, approve: boolean, alwaysAllow?: boolean): Promise<void>;
  /** Undoes the finished turn's changes with a revert commit. */
  revert(): Promise<TurnRevertAnswer>;
  /** Reads the stored steps of a past turn. */
  loadEvents(): void;
}

/** Re-renders every `intervalMs` while `active`, for elapsed times. */
function useNow(active: boolean, intervalMs = 1000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!active) return;
    const timer = setInterval(() => setNow(Date.now()), intervalMs);
    return () => clearInterval(timer);
  }, [active, intervalMs]);
  return active ? Math.max(now, Date.now()) : now;
}

function elapsedOf(turn: ChatTurn, view: TurnView, now: number): number | null {
  const start = timeOf(turn.startedAt) ?? view.firstEventAt ?? timeOf(turn.createdAt);
  if (start === null) return null;
  const final = isFinalTurnStatus(turn.status);
  const end = timeOf(turn.finishedAt) ?? view.done?.at ?? (final ? view.lastEventAt : null) ?? now;
  return Math.max(0, end - start);
}

/**
 * Where the turn's work went: the branch, its short commit, pushed or why not, and the session's
 * pull request (or only the commit, when the project keeps work on the drone). The stored turn
 * wins over the live event: "Deliver now" updates it after the turn ended.
 */
export function DeliveryLine({ turn, view }: { turn: ChatTurn; view: TurnView }) {
  const stored = turn.delivery;
  const delivery = stored
    ? {
        branch: stored.branch,
        commit: stored.commit,
        pushed: stored.pushedAt !== null,
        error: stored.error,
        pullRequestUrl: stored.pullRequestUrl,
      }
    : view.delivery
      ? {
          ...view.delivery,
          error: view.delivery.error ?? null,
          pullRequestUrl: view.delivery.pullRequestUrl ?? null,
        }
      : null;
  if (!delivery) {
    // Delivery `workspace`: the commit stays on the drone, on the session's branch.
    const branch = turn.branch ?? view.commit?.branch ?? null;
    const commit = turn.commit ?? view.commit?.commit ?? null;
    if (!branch || !commit) return null;
    return (
      <div className="verification" role="status" aria-label="Commit">
        Committed <code>{commit.slice(0, 7)}</code> on branch <code>{branch}</code> (kept on the
        drone)
      </div>
    );
  }
  // Only a forge's web address is a link: anything else is shown as text.
  const pullRequestUrl =
    delivery.pullRequestUrl && /^https?:\/\//.test(delivery.pullRequestUrl)
      ? delivery.pullRequestUrl
      : null;
  return (
    <div
      className={`verification ${delivery.pushed && !delivery.error ? "ok" : "bad"}`}
      role="status"
      aria-label="Delivery"
    >
      Branch <code>{delivery.branch}</code>
      {delivery.commit ? (
        <>
          {" "}
          at <code>{delivery.commit.slice(0, 7)}</code>
        </>
      ) : null}
      {delivery.pushed ? " pushed to origin" : ` not pushed: ${delivery.error ?? "unknown reason"}`}
      {pullRequestUrl ? (
        <>
          {"; "}
          <a href={pullRequestUrl} target="_blank" rel="noreferrer">
            pull request
          </a>
        </>
      ) : null}
      {delivery.pushed && delivery.error ? `; ${delivery.error}` : null}
    </div>
  );
}

/** The status line: status, pass, model, elapsed, escalations. */
export function StatusLine({ turn, view, now }: { turn: ChatTurn; view: TurnView; now: number }) {
  const elapsed = elapsedOf(turn, view, now);
  const pass = Math.max(view.pass, view.done?.passes ?? 0, turn.stats.passes);
  const model = view.model ?? turn.llm;
  const live = !isFinalTurnStatus(turn.status);
  const escalations = view.escalations;
  const guard = guardOf(turn, view);
  const waiting = live && view.waitingForWorktree;
  const word = statusWordOf(turn, view);
  return (
    <div
      className="status-line"
      data-status={turn.status}
      {...(guard ? { "data-guard": guard } : {})}
    >
      <span
        className={`status-dot status-${guard ? "guard" : waiting ? "queued" : turn.status}`}
        aria-hidden="true"
      />
      <strong className="status-word">{word}</strong>
      {pass > 0 ? <span>pass {pass}</span> : null}
      {model ? <code className="status-model">{model}</code> : null}
      {elapsed !== null ? <span>{formatElapsed(elapsed)}</span> : null}
      {escalations > 0 ? (
        <span className="status-escalations">
          {escalations} escalation{escalations === 1 ? "" : "s"}
        </span>
      ) : null}
      {view.droneName ? <span className="muted">on {view.droneName}</span> : null}
      {waiting ? (
        <span className="status-message muted">
          another turn of this session is using it; this one starts when it ends
        </span>
      ) : live && view.statusMessage && view.statusMessage !== word ? (
        <span className="status-message muted">{view.statusMessage}</span>
      ) : null}
    </div>
  );
}

function Meter({
  label,
  value,
  limit,
  format,
}: {
  label: string;
  value: number;
  limit: number | undefined;
  format: (value: number) => string;
}) {
  const ratio = limit && Number.isFinite(value) ? Math.min(1, value / limit) : 0;
  return (
    <div className="meter">
      <span className="meter-label">{label}</span>
      <span className="meter-value">
        {format(value)}
        {limit ? <span className="muted"> / {format(limit)}</span> : null}
      </span>
      {limit ? (
        <span className={`meter-bar ${ratio > 0.9 ? "meter-hot" : ""}`}>
          <span style={{ width: `${ratio * 100}%` }} />
        </span>
      ) : null}
    </div>
  );
}

/** Tokens and cost against the turn's budget, from cost_update events or the stored stats. */
export function CostMeters({ turn, view }: { turn: ChatTurn; view: TurnView }) {
  const tokens = Math.max(
    totalTokens(view),
    turn.stats.inputTokens + turn.stats.responseTokens + turn.stats.thinkingTokenCount,
  );
  const cost = Math.max(view.cost?.totalCost ?? 0, view.done?.totalCost ?? 0, turn.stats.cost);
  const unknown = costUnknown(turn, view);
  return (
    <div className="meters">
      <Meter label="Tokens" value={tokens} limit={turn.limits?.tokenBudget} format={formatTokens} />
      <Meter
        label="Cost"
        value={unknown ? Number.NaN : cost}
        limit={turn.limits?.costBudget}
        format={(value) => (Number.isFinite(value) ? formatCost(value) : UNKNOWN_COST)}
      />
      <Meter
        label="Tool calls"
        value={Math.max(view.tools.length, turn.stats.toolCallCount)}
        limit={turn.limits?.maxToolCalls}
        format={(value) => String(value)}
      />
    </div>
  );
}

/** The cost of a turn whose provider has no prices. */
const UNKNOWN_COST = "—";

type Tab = "activity" | "document" | "changes" | "debug";

export interface TurnPanelProps {
  snapshot: TurnSnapshot;
  actions: TurnActions;
  /** Shows the debug tab (developer events). */
  showDebug?: boolean;
}

/** One turn, live or past. A past turn shows its stats and loads its steps on request. */
export function TurnPanel({ snapshot, actions, showDebug = false }: TurnPanelProps) {
  const { turn, view, eventsLoaded, loadError } = snapshot;
  const final = isFinalTurnStatus(turn.status);
  const now = useNow(!final);
  const [tab, setTab] = useState<Tab>("activity");
  const [busy, setBusy] = useState<"cancel" | "resume" | null>(null);
  const [actionError, setActionError] = useState<unknown>(null);
  // What this user decided here; the events only tell that a decision was made.
  const [decisions, setDecisions] = useState<Record<string, boolean>>({});
  const hasSteps = view.eventCount > 0;
  const showSteps = !final || hasSteps;
  // A turn that stopped or failed never answered: what it streamed is narration, not the answer.
  const answered = !final || turn.status === "completed";
  const streamed = view.response ?? turn.response ?? null;
  const answer = streamed ?? (answered ? view.draft : "");
  const narration = streamed === null && !answered ? view.draft : "";
  const guard = guardOf(turn, view);
  const errors = [
    ...view.errors,
    ...(turn.error && !view.errors.some((error) => error.message === turn.error?.message)
      ? [{ ...turn.error, seq: 0 }]
      : []),
  ];

  const run = async (which: "cancel" | "resume") => {
    setBusy(which);
    setActionError(null);
    try {
      await (which === "cancel" ? actions.cancel() : actions.resume());
    } catch (error) {
      setActionError(error);
    } finally {
      setBusy(null);
    }
  };

  // A finished turn's open approvals can no longer be decided. When the server lists the turn's
  // open approvals (an optional field) in a record at least as new as the request, the others
  // were decided already, e.g. before a reload.
  const open = (turn as { pendingApprovals?: { id: string }[] }).pendingApprovals;
  const decidedElsewhere = (approval: ApprovalItem) =>
    Array.isArray(open) &&
    (turn.lastSeq ?? 0) >= approval.requestedSeq &&
    !open.some((item) => item.id === approval.id);
  const pending = final
    ? []
    : view.approvals.filter(
        (approval) => approval.state === "pending" && !decidedElsewhere(approval),
      );
  const decided = view.approvals.filter((approval) => !pending.includes(approval));
  const changeCount = view.changes?.files.length ?? turn.changes.length;
  const documentSections = view.document ? Object.entries(view.document) : [];

  return (
    <article className={`turn ${final ? "turn-final" : "turn-live"}`} data-turn-id={turn._id}>
      <div className="prompt-bubble">{turn.prompt}</div>
      <div className="turn-panel">
        <div className="turn-head">
          <StatusLine turn={turn} view={view} now={now} />
          <div className="turn-buttons">
            {!final ? (
              <button
                type="button"
                className="button small danger"
                disabled={busy !== null}
                onClick={() => run("cancel")}
              >
                {busy === "cancel" ? "Stopping…" : "Stop"}
              </button>
            ) : null}
            {turn.status === "interrupted" || turn.status === "failed" ? (
              <button
                type="button"
                className="button small"
                disabled={busy !== null}
                onClick={() => run("resume")}
              >
                {busy === "resume" ? "Resuming…" : "Resume"}
              </button>
            ) : null}
          </div>
        </div>
        <ErrorNote error={actionError} title="That did not work" />
        {final ? (
          <RevertControl turn={turn} changedFiles={changeCount} revert={actions.revert} />
        ) : null}
        <CostMeters turn={turn} view={view} />
        {view.preEnrichment && !final ? <p className="muted small">{view.preEnrichment}</p> : null}
        {turn.waiting && !final ? (
          <div className="warning-note" role="status">
            Reconnecting to the {turn.waiting.on === "database" ? "database" : "server's Redis"}…
            the drone keeps this turn's events and sends them again; nothing is lost.
          </div>
        ) : null}
        {view.warnings.map((warning) => (
          <div key={warning} className="warning-note" role="status">
            <strong>Warning</strong> {warning}
          </div>
        ))}
        {view.adaptations.map((adaptation) => (
          <div key={adaptation.quirk} className="note" role="status">
            <strong>Adapted to the provider:</strong> {describeQuirk(adaptation.quirk)}. It said:{" "}
            <q>{adaptation.message}</q>
          </div>
        ))}
        {errors.map((error) => (
          <div
            key={`${error.seq}:${error.code}`}
            className="error-note turn-error"
            role="alert"
            aria-label={errorTitle(error.code)}
          >
            <strong className="error-title">{errorTitle(error.code)}</strong>
            <p className="error-cause">
              {error.message} <code className="error-code">{error.code}</code>
            </p>
          </div>
        ))}
        {pending.map((approval) => (
          <ApprovalCard
            key={approval.id}
            approval={approval}
            offerAlwaysAllow
            onDecide={async (approve, alwaysAllow) => {
              await actions.decide(approval.id, approve, alwaysAllow);
              setDecisions((current) => ({ ...current, [approval.id]: approve }));
            }}
          />
        ))}
        {decided.length > 0 ? (
          <ul className="decided-list">
            {decided.map((approval) => (
              <li key={approval.id}>
                <code>{approval.tool}</code> {approval.description}{" "}
                <span className="muted">
                  — {decisionWord(decisions[approval.id], approval.state)}
                </span>
              </li>
            ))}
          </ul>
        ) : null}

        <DeliveryLine turn={turn} view={view} />
        {showSteps ? (
          <>
            <div className="tabs" role="tablist">
              {(
                [
                  ["activity", `Activity (${view.tools.length})`],
                  ["document", "Document"],
                  ["changes", `Changes${changeCount ? ` (${changeCount})` : ""}`],
                  ...(showDebug ? [["debug", `Debug (${view.debug.length})`]] : []),
                ] as [Tab, string][]
              ).map(([key, label]) => (
                <button
                  key={key}
                  type="button"
                  role="tab"
                  aria-selected={tab === key}
                  className={`tab ${tab === key ? "tab-active" : ""}`}
                  onClick={() => setTab(key)}
                >
                  {label}
                </button>
              ))}
            </div>
            {tab === "activity" ? (
              <div className="tab-body">
                {view.thinking.length > 0 ? (
                  <details className="thinking">
                    <summary>
                      Reasoning
                      {!final &&
                      turn.status !== "awaiting_approval" &&
                      view.phase !== "awaiting_approval" &&
                      view.thinking.at(-1)?.pass === view.pass
                        ? " (thinking…)"
                        : ""}
                    </summary>
                    {view.thinking.map((block) => (
                      <div key={block.pass} className="thinking-block">
                        {view.thinking.length > 1 ? (
                          <div className="tool-detail-label">Pass {block.pass}</div>
                        ) : null}
                        <p>{block.text}</p>
                      </div>
                    ))}
                  </details>
                ) : null}
                <ToolActivityList tools={view.tools} follow={!final} />
                {view.verification ? (
                  <div className={`verification ${view.verification.ok ? "ok" : "bad"}`}>
                    Verification {view.verification.ok ? "passed" : "failed"}:{" "}
                    {view.verification.commands
                      .map((command) => `${command.command} → ${command.exitCode ?? "?"}`)
                      .join(", ")}
                  </div>
                ) : null}
              </div>
            ) : null}
            {tab === "document" ? (
              <div className="tab-body document">
                {documentSections.length === 0 ? (
                  <p className="muted">The agent has not written its working document yet.</p>
                ) : (
                  documentSections.map(([name, text]) => (
                    <section key={name}>
                      <h4>{name}</h4>
                      <Markdown source={text} />
                    </section>
                  ))
                )}
              </div>
            ) : null}
            {tab === "changes" ? (
              <div className="tab-body">
                {view.changes ? (
                  <DiffView {...view.changes} />
                ) : turn.changes.length > 0 ? (
                  <DiffView files={turn.changes} diff="" truncated={false} />
                ) : (
                  <p className="muted">
                    {final
                      ? "This turn changed no files."
                      : "Changes are listed when the turn ends."}
                  </p>
                )}
              </div>
            ) : null}
            {tab === "debug" ? (
              <div className="tab-body">
                <pre className="tool-pre">
                  {view.debug.map((entry) => `#${entry.seq} ${entry.message}`).join("\n")}
                </pre>
              </div>
            ) : null}
          </>
        ) : (
          <div className="past-turn">
            <TurnStats turn={turn} />
            {loadError ? null : (
              <button type="button" className="button small" onClick={actions.loadEvents}>
                {eventsLoaded ? "No steps stored" : "Show steps and changes"}
              </button>
            )}
          </div>
        )}
        {loadError ? <ErrorNote error={new Error(loadError)} onRetry={actions.loadEvents} /> : null}
      </div>
      {answer ? (
        <div className={guard ? "answer answer-guard" : "answer"}>
          {guard ? <p className="answer-label">Where it stood when the guard stopped it:</p> : null}
          <Markdown source={answer} />
        </div>
      ) : null}
      {narration ? (
        <details className="narration">
          <summary>
            What the model said before the turn {turn.status === "failed" ? "failed" : "stopped"}{" "}
            <span className="muted small">(not an answer)</span>
          </summary>
          <Markdown source={narration} />
        </details>
      ) : null}
      {final && showSteps ? <TurnStats turn={turn} view={view} /> : null}
    </article>
  );
}

function decisionWord(mine: boolean | undefined, state: string): string {
  if (mine === true) return "you approved";
  if (mine === false) return "you denied";
  if (state === "approved") return "approved";
  if (state === "denied") return "denied";
  return "decided";
}

/** A finished turn's stats in one line: the stored stats, completed by its events if read. */
export function TurnStats({ turn, view }: { turn: ChatTurn; view?: TurnView }) {
  const stats = turn.stats;
  const passes = Math.max(stats.passes, view?.done?.passes ?? 0, view?.pass ?? 0);
  const tools = Math.max(stats.toolCallCount, view?.tools.length ?? 0);
  const tokens = Math.max(
    stats.inputTokens + stats.responseTokens + stats.thinkingTokenCount,
    view ? totalTokens(view) : 0,
  );
  const cost = Math.max(stats.cost, view?.cost?.totalCost ?? 0, view?.done?.totalCost ?? 0);
  const reason = turn.exitReason ?? view?.done?.reason ?? null;
  const guard = turn.status === "completed" && reason && guardWords[reason] ? reason : null;
  const unknownCost = costUnknown(turn, view);
  const elapsed =
    stats.durationMs > 0 || !view ? stats.durationMs : (elapsedOf(turn, view, 0) ?? 0);
  return (
    <p className="turn-stats">
      {guard
        ? `Stopped by a guard (${guardWords[guard]})`
        : `${statusWords[turn.status]}${reason ? ` (${exitWords[reason] ?? reason})` : ""}`}{" "}
      · {passes} pass
      {passes === 1 ? "" : "es"} · {tools} tool call{tools === 1 ? "" : "s"} ·{" "}
      {formatTokens(tokens)} tokens · {unknownCost ? `cost ${UNKNOWN_COST}` : formatCost(cost)} ·{" "}
      {stats.durationLabel !== "pending" && stats.durationMs > 0
        ? stats.durationLabel
        : formatElapsed(elapsed)}
    </p>
  );
}
