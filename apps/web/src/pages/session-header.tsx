// A session page's header: the breadcrumb, its mode and approval, its branch and where the
// worktree stands, and "Deliver now".
import type { SessionDetail } from "@gadget/protocol";
import { Link } from "wouter";
import { ErrorNote } from "../components/error-note.tsx";
import { useDeliverSession } from "../data/sessions.ts";

/**
 * "Deliver now": the drone holding the session's worktree commits what is uncommitted and pushes
 * the branch; the session's last turn then shows the outcome.
 */
function DeliverButton({
  sessionId,
  onDelivered,
}: {
  sessionId: string;
  onDelivered: (turnId: string) => void;
}) {
  const deliver = useDeliverSession(sessionId);
  const delivery = deliver.data;
  return (
    <>
      <button
        type="button"
        className="button small"
        disabled={deliver.isPending}
        onClick={() =>
          deliver.mutate(undefined, {
            onSuccess: ({ turnId }) => {
              if (turnId) onDelivered(turnId);
            },
          })
        }
      >
        {deliver.isPending ? "Delivering…" : "Deliver now"}
      </button>
      {delivery ? (
        <span className="muted small">
          {delivery.pushed
            ? `Pushed ${delivery.branch}${delivery.commit ? ` at ${delivery.commit.slice(0, 7)}` : ""}`
            : `Not pushed: ${delivery.error ?? "unknown reason"}`}
        </span>
      ) : null}
      <ErrorNote error={deliver.error} title="Could not deliver the session" />
    </>
  );
}

/**
 * The session's branch, and where its worktree stands on the drone holding it: commits ahead of
 * and behind the default branch, and uncommitted changes (hand edits).
 */
export function BranchState({ session }: { session: SessionDetail }) {
  if (!session.branch) return null;
  const worktree = session.worktree;
  const base = worktree?.base.replace(/^origin\//, "") || "the default branch";
  return (
    <span className="branch-state" role="status" aria-label="Branch">
      <code>{session.branch}</code>{" "}
      {worktree ? (
        <span className="muted small">
          {worktree.ahead} ahead · {worktree.behind} behind {base}
          {worktree.dirty ? " · uncommitted changes" : ""}
        </span>
      ) : (
        <span className="muted small">(its drone is offline)</span>
      )}
      {session.pullRequest && /^https?:\/\//.test(session.pullRequest.url) ? (
        <>
          {" "}
          <a href={session.pullRequest.url} target="_blank" rel="noreferrer">
            pull request #{session.pullRequest.number}
          </a>
        </>
      ) : null}
    </span>
  );
}

export function SessionHeader({
  projectId,
  projectName,
  session,
  onDelivered,
}: {
  projectId: string;
  /** The project's name once known ("Project" until then, or when it cannot be read). */
  projectName: string | undefined;
  session: SessionDetail | undefined;
  /** A delivery changed this turn's record (its delivery line). */
  onDelivered: (turnId: string) => void;
}) {
  return (
    <div className="page-head">
      <Link href={`/projects/${projectId}`} className="muted">
        {projectName ?? "Project"}
      </Link>
      <span className="muted">/</span>
      <h1>{session?.name ?? "Session"}</h1>
      {session ? (
        <>
          <span className="pill">mode {session.mode}</span>
          <span className="pill">
            {session.approval === "on-write" ? "approve writes" : "auto approve"}
          </span>
          <BranchState session={session} />
          <DeliverButton sessionId={session._id} onDelivered={onDelivered} />
        </>
      ) : null}
    </div>
  );
}
