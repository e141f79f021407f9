// Activity, the home page: every turn of the user across projects, live ones first (what each is
// doing, an approval decided in place, why a queued one waits), then the finished ones with their
// outcome, cost, changes and duration; filters by project, drone and status.
import type { ActivityTurn, ExitReason, TurnStatus } from "@gadget/protocol";
import { useMutation } from "@tanstack/react-query";
import { memo, useEffect, useMemo, useState, useSyncExternalStore } from "react";
import { Link } from "wouter";
import type { ApiClient } from "../api/client.ts";
import { useApi } from "../app/auth.tsx";
import { useConnection } from "../app/live.tsx";
import { useSecond } from "../app/use-now.ts";
import { ErrorNote } from "../components/error-note.tsx";
import { formatAgo, formatCost, formatElapsed } from "../lib/format.ts";
import { type ActivityFilters, ActivityStore } from "../live/activity-store.ts";
import { droneOfflineWords } from "../turn/turn-words.ts";
import { Filters, statusChoices } from "./activity-filters.tsx";
import { FirstRunChecklist } from "./first-run-checklist.tsx";
import { NotificationSwitch } from "./notification-switch.tsx";

const statusLabels: Record<TurnStatus, string> = {
  queued: "Queued",
  dispatched: "Starting",
  processing: "Running",
  awaiting_approval: "Needs approval",
  completed: "Completed",
  failed: "Failed",
  cancelled: "Stopped",
  interrupted: "Interrupted",
};

/** Ends that are not an answer: the turn was stopped by one of its guards. */
const guardLabels: Partial<Record<ExitReason, string>> = {
  max_passes: "stopped: pass limit",
  max_tool_calls: "stopped: tool-call limit",
  token_budget: "stopped: token budget",
  budget_exceeded: "stopped: cost budget",
  stuck: "stopped: stuck",
  all_tools_duplicate: "stopped: repeated calls",
};

function timeOf(value: Date | string | null | undefined): number | null {
  if (!value) return null;
  const time = new Date(value).getTime();
  return Number.isFinite(time) ? time : null;
}

function sessionHref(turn: ActivityTurn): string {
  return `/projects/${turn.project}/sessions/${turn.session}`;
}

function Where({ turn }: { turn: ActivityTurn }) {
  return (
    <Link href={sessionHref(turn)} className="activity-where">
      <strong>{turn.projectName}</strong>
      <span className="muted"> / {turn.sessionName}</span>
    </Link>
  );
}

/** The time since `since`: each tick of the clock renders this span alone, not its row. */
function Elapsed({ since }: { since: number }) {
  const elapsed = formatElapsed(useSecond() - since);
  return elapsed ? <span className="activity-elapsed">{elapsed}</span> : null;
}

function OfflineWords({ until }: { until: number }) {
  return <span>{droneOfflineWords({ until }, useSecond())}</span>;
}

function LiveDetail({ turn }: { turn: ActivityTurn }) {
  const activity = turn.activity;
  const started = timeOf(turn.startedAt);
  if (turn.status === "queued") {
    return <span className="activity-detail">{turn.queuedReason ?? "Waiting for a drone"}</span>;
  }
  const offlineUntil =
    activity?.droneOffline === undefined
      ? turn.waiting?.reason === "drone_offline"
        ? timeOf(turn.waiting.until)
        : null
      : timeOf(activity.droneOffline?.until);
  if (offlineUntil !== null) {
    return (
      <span className="activity-detail">
        <strong className="activity-offline">drone offline</strong>
        <OfflineWords until={offlineUntil} />
      </span>
    );
  }
  return (
    <span className="activity-detail">
      {activity?.pass ? <span className="activity-pass">pass {activity.pass}</span> : null}
      {activity?.tool ? (
        <span className="activity-tool">
          <code>{activity.tool.name}</code>
        </span>
      ) : turn.status === "dispatched" ? (
        <span>starting on the drone</span>
      ) : turn.status === "processing" ? (
        <span className="muted">thinking</span>
      ) : null}
      {started === null ? null : <Elapsed since={started} />}
    </span>
  );
}

function Approvals({
  turn,
  api,
  onDecided,
}: {
  turn: ActivityTurn;
  api: ApiClient;
  onDecided: (approvalId: string) => void;
}) {
  const decide = useMutation({
    mutationFn: ({ approvalId, approve }: { approvalId: string; approve: boolean }) =>
      api.decideApproval(turn._id, approvalId, approve),
    onSuccess: (_answer, { approvalId }) => onDecided(approvalId),
  });
  const approvals = turn.activity?.approvals ?? [];
  if (approvals.length === 0) {
    return (
      <span className="activity-detail">
        Waiting for your approval: <Link href={sessionHref(turn)}>open the session</Link>
      </span>
    );
  }
  return (
    <div className="activity-approvals">
      {approvals.map((approval) => (
        <fieldset
          key={approval.id}
          className="activity-approval"
          aria-label={`Approval for ${approval.tool}`}
        >
          <span>
            <code>{approval.tool}</code> {approval.description}
          </span>
          <span className="activity-approval-actions">
            <button
              type="button"
              className="button primary small"
              disabled={decide.isPending}
              onClick={() => decide.mutate({ approvalId: approval.id, approve: true })}
            >
              Approve
            </button>
            <button
              type="button"
              className="button small"
              disabled={decide.isPending}
              onClick={() => decide.mutate({ approvalId: approval.id, approve: false })}
            >
              Deny
            </button>
          </span>
        </fieldset>
      ))}
      <ErrorNote error={decide.error} title="Could not send the decision" />
    </div>
  );
}

/** Renders again only when its turn changes (a new object from the store). */
const LiveRow = memo(function LiveRow({
  turn,
  api,
  onDecided,
}: {
  turn: ActivityTurn;
  api: ApiClient;
  onDecided: (turnId: string, approvalId: string) => void;
}) {
  return (
    <li className="activity-row" data-turn-id={turn._id} data-status={turn.status}>
      <span className={`pill activity-status is-${turn.status}`}>{statusLabels[turn.status]}</span>
      <div className="activity-main">
        <Where turn={turn} />
        <span className="activity-prompt">{turn.prompt}</span>
        {turn.status === "awaiting_approval" ? (
          <Approvals
            turn={turn}
            api={api}
            onDecided={(approvalId) => onDecided(turn._id, approvalId)}
          />
        ) : (
          <LiveDetail turn={turn} />
        )}
      </div>
      <span className="muted small activity-drone">{turn.droneName ?? ""}</span>
    </li>
  );
});

function outcomeOf(turn: ActivityTurn): string {
  const guard = turn.exitReason ? guardLabels[turn.exitReason] : undefined;
  if (turn.status === "completed" && guard) return guard;
  return statusLabels[turn.status];
}

function durationOf(turn: ActivityTurn): string {
  const started = timeOf(turn.startedAt);
  const finished = timeOf(turn.finishedAt);
  if (started !== null && finished !== null) return formatElapsed(finished - started);
  return turn.stats.durationLabel === "pending" ? "—" : turn.stats.durationLabel;
}

const FinishedRow = memo(function FinishedRow({ turn }: { turn: ActivityTurn }) {
  const guarded = turn.status === "completed" && turn.exitReason && guardLabels[turn.exitReason];
  const files = turn.changes.length;
  return (
    <li className="activity-row" data-turn-id={turn._id} data-status={turn.status}>
      <span
        className={`pill activity-status is-${guarded ? "guarded" : turn.status}`}
        title={turn.error?.message}
      >
        {outcomeOf(turn)}
      </span>
      <div className="activity-main">
        <Where turn={turn} />
        <span className="activity-prompt">{turn.prompt}</span>
        <span className="activity-detail muted small">
          <span title="Cost">{turn.stats.cost > 0 ? formatCost(turn.stats.cost) : "—"}</span>
          <span>
            {files === 0 ? "no files changed" : `${files} file${files === 1 ? "" : "s"} changed`}
          </span>
          <span title="Duration">{durationOf(turn)}</span>
          <span>{formatAgo(turn.finishedAt ?? turn.createdAt)}</span>
        </span>
      </div>
      <span className="muted small activity-drone">{turn.droneName ?? ""}</span>
    </li>
  );
});

export function ActivityPage() {
  const api = useApi();
  const connection = useConnection();
  const [project, setProject] = useState("");
  const [drone, setDrone] = useState("");
  const [status, setStatus] = useState("");
  const filters = useMemo<ActivityFilters>(() => {
    const statuses = statusChoices.find((choice) => choice.value === status)?.statuses ?? [];
    return {
      ...(project ? { project } : {}),
      ...(drone ? { drone } : {}),
      ...(statuses.length > 0 ? { status: statuses } : {}),
    };
  }, [project, drone, status]);
  const store = useMemo(() => new ActivityStore({ api, filters }), [api, filters]);
  useEffect(() => {
    void store.load();
    return () => store.dispose();
  }, [store]);
  useEffect(() => (connection ? store.attach(connection) : undefined), [store, connection]);
  const snapshot = useSyncExternalStore(store.subscribe, store.getSnapshot);
  const onDecided = useMemo(
    () => (turnId: string, approvalId: string) => store.decided(turnId, approvalId),
    [store],
  );
  const empty = !snapshot.loading && snapshot.live.length === 0 && snapshot.finished.length === 0;

  return (
    <div className="page activity-page">
      <div className="page-head">
        <h1>Activity</h1>
        <NotificationSwitch />
      </div>
      <Filters
        project={project}
        drone={drone}
        status={status}
        setProject={setProject}
        setDrone={setDrone}
        setStatus={setStatus}
      />
      {snapshot.error ? (
        <ErrorNote
          error={new Error(snapshot.error)}
          title="Could not load your turns"
          onRetry={() => void store.load()}
        />
      ) : null}
      {snapshot.loading ? <p className="muted">Loading your turns…</p> : null}
      {empty && (project || drone || status) ? (
        <p className="empty">No turns match these filters.</p>
      ) : empty ? (
        <FirstRunChecklist turns={false} />
      ) : null}
      {snapshot.live.length > 0 ? (
        <section aria-label="Live turns">
          <h2>Live</h2>
          <ul className="activity-list">
            {snapshot.live.map((turn) => (
              <LiveRow key={turn._id} turn={turn} api={api} onDecided={onDecided} />
            ))}
          </ul>
        </section>
      ) : null}
      {snapshot.finished.length > 0 ? (
        <section aria-label="Finished turns">
          <h2>Recently finished</h2>
          <ul className="activity-list">
            {snapshot.finished.map((turn) => (
              <FinishedRow key={turn._id} turn={turn} />
            ))}
          </ul>
          {snapshot.hasMore ? (
            <button type="button" className="button" onClick={() => void store.loadMore()}>
              Show older turns
            </button>
          ) : null}
        </section>
      ) : null}
    </div>
  );
}
