// One turn of the conversation: the prompt, the live panel (status line, thinking, tool activity,
// living document, cost against budget, approvals, Stop / Resume, Changes) and the answer.
import type { TurnRevertAnswer } from "@gadget/protocol";
import { isFinalTurnStatus } from "@gadget/protocol";
import { useMutation } from "@tanstack/react-query";
import { useState } from "react";
import { useNow } from "../app/use-now.ts";
import { ErrorNote } from "../components/error-note.tsx";
import { Markdown } from "../components/markdown.tsx";
import { describeQuirk } from "../lib/quirks.ts";
import type { TurnSnapshot } from "../live/turn-store.ts";
import type { ApprovalItem } from "../live/turn-view.ts";
import { ApprovalCard } from "./approval-card.tsx";
import { BudgetCard } from "./budget-card.tsx";
import { RevertControl } from "./revert-control.tsx";
import {
  CommandExpansion,
  HistoryControls,
  QueuedControls,
  SteeringMessages,
} from "./turn-controls.tsx";
import { TurnImages } from "./turn-images.tsx";
import { CostMeters, DeliveryLine, StatusLine, TurnStats } from "./turn-status.tsx";
import { TurnSteps } from "./turn-steps.tsx";
import {
  droneOfflineOf,
  droneOfflineWords,
  errorTitle,
  guardOf,
  quotaWaitOf,
  quotaWaitWords,
} from "./turn-words.ts";

export interface TurnActions {
  cancel(): Promise<void>;
  resume(): Promise<void>;
  /**
   * `alwaysAllow`: approve, and let the session run this exact command without asking again;
   * `input`: what goes with the decision (a budget's `{extendBy}`).
   */
  decide(
    approvalId: string,
    approve: boolean,
    alwaysAllow?: boolean,
    input?: { extendBy: number },
  ): Promise<void>;
  /** Undoes the finished turn's changes with a revert commit. */
  revert(): Promise<TurnRevertAnswer>;
  /** Reads the stored steps of a past turn. */
  loadEvents(): void;
  /** A queued turn's new prompt. */
  edit?(prompt: string): Promise<void>;
  /** Takes back this turn and the later ones (code and conversation). */
  rewind?(): Promise<void>;
  /** A new session from this turn. */
  fork?(): Promise<void>;
  /** The session's last turn only: rewinds it and sends `prompt` as a new turn. */
  resend?(prompt: string): Promise<void>;
}

export interface TurnPanelProps {
  snapshot: TurnSnapshot;
  actions: TurnActions;
  /** Shows the debug tab (developer events). */
  showDebug?: boolean;
  /** A queued turn's place behind the session's unfinished turns, as the page counts it. */
  queuePosition?: number | undefined;
}

/** One turn, live or past. A past turn shows its stats and loads its steps on request. */
export function TurnPanel({ snapshot, actions, showDebug = false, queuePosition }: TurnPanelProps) {
  const { turn, view, eventsLoaded, loadError } = snapshot;
  const final = isFinalTurnStatus(turn.status);
  // Between ticks a live turn reads the clock itself: its status line is never behind.
  const tick = useNow({ active: !final });
  const now = final ? tick : Math.max(tick, Date.now());
  const stop = useMutation({ mutationFn: () => actions.cancel() });
  const resume = useMutation({ mutationFn: () => actions.resume() });
  const busy = stop.isPending || resume.isPending;
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
  const offline = droneOfflineOf(turn, view);
  const quota = quotaWaitOf(turn, view);
  const errors = [
    ...view.errors,
    ...(turn.error && !view.errors.some((error) => error.message === turn.error?.message)
      ? [{ ...turn.error, seq: 0 }]
      : []),
  ];

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

  return (
    <article
      className={`turn ${final ? "turn-final" : "turn-live"}${turn.rewoundAt ? " turn-rewound" : ""}`}
      data-turn-id={turn._id}
    >
      <div className="prompt-bubble">
        {turn.prompt}
        {turn.rewoundAt ? <span className="badge muted"> rewound</span> : null}
        <TurnImages turnId={turn._id} images={turn.images} />
      </div>
      <div className="turn-panel">
        <div className="turn-head">
          <StatusLine turn={turn} view={view} now={now} />
          <div className="turn-buttons">
            {!final ? (
              <button
                type="button"
                className="button small danger"
                disabled={busy}
                onClick={() => {
                  resume.reset();
                  stop.mutate();
                }}
              >
                {stop.isPending ? "Stopping…" : "Stop"}
              </button>
            ) : null}
            {turn.status === "interrupted" || turn.status === "failed" ? (
              <button
                type="button"
                className="button small"
                disabled={busy}
                onClick={() => {
                  stop.reset();
                  resume.mutate();
                }}
              >
                {resume.isPending ? "Resuming…" : "Resume"}
              </button>
            ) : null}
          </div>
        </div>
        <ErrorNote error={stop.error ?? resume.error} title="That did not work" />
        {final ? (
          <RevertControl turn={turn} changedFiles={changeCount} revert={actions.revert} />
        ) : null}
        {final && !turn.rewoundAt && actions.rewind && actions.fork ? (
          <HistoryControls
            prompt={turn.prompt}
            rewind={actions.rewind}
            fork={actions.fork}
            resend={actions.resend}
          />
        ) : null}
        {turn.status === "queued" && actions.edit ? (
          <QueuedControls
            turn={turn}
            position={queuePosition}
            edit={actions.edit}
            remove={actions.cancel}
          />
        ) : null}
        <CommandExpansion command={view.command} />
        <SteeringMessages messages={view.userMessages} />
        <CostMeters turn={turn} view={view} />
        {view.preEnrichment && !final ? <p className="muted small">{view.preEnrichment}</p> : null}
        {quota && !offline ? (
          <div className="warning-note" role="status">
            <strong>Rate-limited by the provider</strong>: the turn {quotaWaitWords(quota, now)}.
            Stop cancels it.
          </div>
        ) : null}
        {offline ? (
          <div className="warning-note" role="status">
            <strong>Drone offline</strong>: {offline.droneName ?? "the turn's drone"} lost its
            connection. The turn waits for it and goes on where it was;{" "}
            {droneOfflineWords(offline, now)}.
          </div>
        ) : turn.waiting && "on" in turn.waiting && !final ? (
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
        {pending.map((approval) =>
          approval.kind === "budget" ? (
            <BudgetCard
              key={approval.id}
              approval={approval}
              onDecide={async (approve, extendBy) => {
                await actions.decide(
                  approval.id,
                  approve,
                  undefined,
                  extendBy === undefined ? undefined : { extendBy },
                );
                setDecisions((current) => ({ ...current, [approval.id]: approve }));
              }}
            />
          ) : (
            <ApprovalCard
              key={approval.id}
              approval={approval}
              offerAlwaysAllow
              onDecide={async (approve, alwaysAllow) => {
                await actions.decide(approval.id, approve, alwaysAllow);
                setDecisions((current) => ({ ...current, [approval.id]: approve }));
              }}
            />
          ),
        )}
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
          <TurnSteps turn={turn} view={view} showDebug={showDebug} />
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
