// A turn's status line (status, pass, model, elapsed), its cost meters against the budget, where
// its work was delivered, and the one-line stats of a finished turn.
import type { ChatTurn } from "@gadget/protocol";
import { isFinalTurnStatus } from "@gadget/protocol";
import { formatCost, formatElapsed, formatTokens } from "../lib/format.ts";
import { costUnknown, type TurnView, totalTokens } from "../live/turn-view.ts";
import {
  droneOfflineOf,
  droneOfflineWords,
  elapsedOf,
  exitWords,
  guardOf,
  guardWords,
  statusWordOf,
  statusWords,
  UNKNOWN_COST,
} from "./turn-words.ts";

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
  const offline = droneOfflineOf(turn, view);
  const word = statusWordOf(turn, view);
  return (
    <div
      className="status-line"
      data-status={turn.status}
      {...(guard ? { "data-guard": guard } : {})}
    >
      <span
        className={`status-dot status-${guard ? "guard" : waiting || offline ? "queued" : turn.status}`}
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
      {offline ? (
        <span className="status-message muted">{droneOfflineWords(offline, now)}</span>
      ) : waiting ? (
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
