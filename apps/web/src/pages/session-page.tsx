// A chat session: the conversation with a live panel per turn, the composer and the session chart.
import { isFinalTurnStatus, type SessionDetail } from "@gadget/protocol";
import { useEffect, useMemo, useRef, useState, useSyncExternalStore } from "react";
import { Link, useLocation } from "wouter";
import { useApi } from "../app/auth.tsx";
import { useConnection } from "../app/live.tsx";
import { useLoader } from "../app/use-loader.ts";
import { ErrorNote } from "../components/error-note.tsx";
import { SessionChart } from "../components/session-chart.tsx";
import { SessionTurns } from "../live/session-turns.ts";
import type { TurnSnapshot, TurnStore } from "../live/turn-store.ts";
import { Composer } from "../turn/composer.tsx";
import { type TurnActions, TurnPanel } from "../turn/turn-panel.tsx";
import { SessionSettings } from "./session-settings.tsx";

const PROVIDER_KEY = "gadget.lastProvider";

function TurnItem({ store, actions }: { store: TurnStore; actions: TurnActions }) {
  const snapshot = useSyncExternalStore(store.subscribe, store.getSnapshot);
  return <TurnPanel snapshot={snapshot} actions={actions} />;
}

/** Snapshots of every turn, refreshed at most a few times a second (for the chart). */
function useSnapshots(stores: TurnStore[]): TurnSnapshot[] {
  const [, setTick] = useState(0);
  useEffect(() => {
    let scheduled: ReturnType<typeof setTimeout> | null = null;
    const bump = () => {
      scheduled ??= setTimeout(() => {
        scheduled = null;
        setTick((tick) => tick + 1);
      }, 250);
    };
    const stops = stores.map((store) => store.subscribe(bump));
    return () => {
      for (const stop of stops) stop();
      if (scheduled) clearTimeout(scheduled);
    };
  }, [stores]);
  return stores.map((store) => store.getSnapshot());
}

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
  const api = useApi();
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const deliver = async () => {
    setBusy(true);
    setError(null);
    setOutcome(null);
    try {
      const { delivery } = await api.deliverSession(sessionId);
      setOutcome(
        delivery.pushed
          ? `Pushed ${delivery.branch}${delivery.commit ? ` at ${delivery.commit.slice(0, 7)}` : ""}`
          : `Not pushed: ${delivery.error ?? "unknown reason"}`,
      );
      if (delivery.turnId) onDelivered(delivery.turnId);
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <button type="button" className="button small" disabled={busy} onClick={() => void deliver()}>
        {busy ? "Delivering…" : "Deliver now"}
      </button>
      {outcome ? <span className="muted small">{outcome}</span> : null}
      <ErrorNote error={error} title="Could not deliver the session" />
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

export function SessionPage({ projectId, sessionId }: { projectId: string; sessionId: string }) {
  const api = useApi();
  const connection = useConnection();
  const turns = useMemo(() => new SessionTurns(sessionId, { api }), [api, sessionId]);
  const stores = useSyncExternalStore(turns.subscribe, turns.getTurns);
  const snapshots = useSnapshots(stores);
  const [loadError, setLoadError] = useState<unknown>(null);
  const [loaded, setLoaded] = useState(false);
  const conversation = useRef<HTMLDivElement>(null);
  const [, navigate] = useLocation();

  const session = useLoader(
    () => api.getSession(sessionId).then((answer) => answer.session),
    [api, sessionId],
  );
  const projectName = useLoader(
    () =>
      api
        .listProjects()
        .then((answer) => answer.projects.find((project) => project._id === projectId)?.name),
    [api, projectId],
  );
  const providers = useLoader(() => api.listProviders().then((answer) => answer.providers), [api]);
  const drones = useLoader(() => api.listDrones().then((answer) => answer.drones), [api]);

  const load = useMemo(
    () => () => {
      setLoadError(null);
      turns
        .load()
        .then(() => setLoaded(true))
        .catch((error: unknown) => setLoadError(error));
    },
    [turns],
  );

  useEffect(() => {
    load();
    return () => turns.dispose();
  }, [turns, load]);

  useEffect(() => {
    turns.attach(connection);
  }, [turns, connection]);

  // After a reconnect, statuses may have moved on while we were away: read them again.
  useEffect(() => {
    if (!connection) return;
    let first = true;
    return connection.onState((state) => {
      if (state !== "connected") return;
      if (first) {
        first = false;
        return;
      }
      turns.load().catch(() => {});
    });
  }, [connection, turns]);

  // Follow the conversation as it grows (new steps, answers) while the reader is at the bottom;
  // once they scroll up to read, leave them there.
  const following = useRef(true);
  useEffect(() => {
    const onScroll = () => {
      const distance = document.documentElement.scrollHeight - window.scrollY - window.innerHeight;
      following.current = distance < 160;
    };
    window.addEventListener("scroll", onScroll, { passive: true });
    return () => window.removeEventListener("scroll", onScroll);
  }, []);
  useEffect(() => {
    const element = conversation.current;
    if (!element || typeof ResizeObserver === "undefined") return;
    const observer = new ResizeObserver(() => {
      if (following.current) window.scrollTo(0, document.documentElement.scrollHeight);
    });
    observer.observe(element);
    return () => observer.disconnect();
  }, []);
  useEffect(() => {
    if (stores.length > 0) window.scrollTo(0, document.documentElement.scrollHeight);
    following.current = true;
  }, [stores.length]);

  // Each turn that ends moves the branch: read where the worktree stands again.
  const ended = snapshots.filter((snapshot) => isFinalTurnStatus(snapshot.turn.status)).length;
  const reloadSession = session.reload;
  useEffect(() => {
    if (ended > 0) reloadSession();
  }, [ended, reloadSession]);

  const actionsFor = (store: TurnStore): TurnActions => ({
    cancel: () => api.cancelTurn(store.id),
    resume: async () => {
      await api.resumeTurn(store.id);
      const { turn } = await api.getTurn(store.id);
      turns.upsert(turn);
    },
    decide: async (approvalId, approve, alwaysAllow) => {
      await api.decideApproval(store.id, approvalId, approve, alwaysAllow);
      // The session now lists the command; its settings show it.
      if (alwaysAllow) session.reload();
    },
    revert: async () => {
      const answer = await api.revertTurn(store.id);
      turns.upsert(answer.turn);
      return answer;
    },
    loadEvents: () => void store.loadEvents(),
  });

  const providerList = providers.data ?? [];
  const now = Date.now();
  let defaultProvider: string | undefined;
  try {
    defaultProvider = localStorage.getItem(PROVIDER_KEY) ?? undefined;
  } catch {
    defaultProvider = undefined;
  }

  return (
    <div className="page session-page">
      <SessionHeader
        projectId={projectId}
        projectName={projectName.data}
        session={session.data}
        onDelivered={(turnId) => {
          session.reload();
          void api
            .getTurn(turnId)
            .then(({ turn }) => turns.upsert(turn))
            .catch(() => undefined);
        }}
      />
      <ErrorNote
        error={session.error}
        title="Could not load the session"
        onRetry={session.reload}
      />
      {session.data ? (
        <SessionSettings
          key={`${session.data.name}:${session.data.mode}:${session.data.approval}`}
          session={session.data}
          onSave={async (body) => {
            const { session: saved } = await api.updateSession(sessionId, body);
            session.setData((current) => (current ? { ...current, ...saved } : current));
          }}
          onDelete={async () => {
            await api.deleteSession(sessionId);
            navigate(`/projects/${projectId}`);
          }}
        />
      ) : null}
      {stores.length > 0 ? <SessionChart snapshots={snapshots} now={now} /> : null}
      <div className="conversation" ref={conversation}>
        <ErrorNote error={loadError} title="Could not load this session's turns" onRetry={load} />
        {!loaded && !loadError ? <p className="muted">Loading the conversation…</p> : null}
        {loaded && stores.length === 0 ? (
          <p className="empty">
            No turns yet. Ask for something below: the prompt goes to one of your drones, and every
            step shows up here as it happens.
          </p>
        ) : null}
        {stores.map((store) => (
          <TurnItem key={store.id} store={store} actions={actionsFor(store)} />
        ))}
      </div>
      <div className="composer-dock">
        <ErrorNote
          error={providers.error}
          title="Could not load providers"
          onRetry={providers.reload}
        />
        {providers.data ? (
          <Composer
            key={providerList.map((provider) => provider._id).join(",")}
            providers={providerList}
            drones={drones.data ?? []}
            defaultProviderId={defaultProvider}
            disabled={providerList.length === 0}
            disabledReason={
              providerList.length === 0 ? "Add a provider first (Providers page)." : undefined
            }
            onSend={async (submission) => {
              const { turn } = await api.createTurn(sessionId, submission);
              try {
                localStorage.setItem(PROVIDER_KEY, submission.providerId);
              } catch {
                // Remembering the provider is a convenience only.
              }
              turns.upsert(turn);
            }}
          />
        ) : null}
      </div>
    </div>
  );
}
