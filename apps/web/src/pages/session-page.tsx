// A chat session: the conversation with a live panel per turn, the composer and the session chart.
import { isFinalTurnStatus } from "@gadget/protocol";
import { useQueryClient } from "@tanstack/react-query";
import { useEffect, useMemo, useRef, useState, useSyncExternalStore } from "react";
import { useLocation } from "wouter";
import { useApi } from "../app/auth.tsx";
import { useConnection } from "../app/live.tsx";
import { ErrorNote } from "../components/error-note.tsx";
import { SessionChart } from "../components/session-chart.tsx";
import { useDrones } from "../data/drones.ts";
import { keys } from "../data/keys.ts";
import { useProject } from "../data/projects.ts";
import { useProviders } from "../data/providers.ts";
import {
  useDeleteSession,
  useSession,
  useSessionCommands,
  useUpdateSession,
} from "../data/sessions.ts";
import {
  useCancelTurn,
  useCreateTurn,
  useDecideApproval,
  useEditTurn,
  useForkSession,
  useResendTurn,
  useResumeTurn,
  useRevertTurn,
  useRewindSession,
  useSteerTurn,
} from "../data/turns.ts";
import { SessionTurns } from "../live/session-turns.ts";
import type { TurnSnapshot, TurnStore } from "../live/turn-store.ts";
import { Composer } from "../turn/composer.tsx";
import { type TurnActions, TurnPanel } from "../turn/turn-panel.tsx";
import { droneOfflineOf } from "../turn/turn-words.ts";
import { SessionHeader } from "./session-header.tsx";
import { SessionSettings } from "./session-settings.tsx";

const PROVIDER_KEY = "gadget.lastProvider";

function TurnItem({
  store,
  actions,
  queuePosition,
}: {
  store: TurnStore;
  actions: TurnActions;
  queuePosition?: number | undefined;
}) {
  const snapshot = useSyncExternalStore(store.subscribe, store.getSnapshot);
  return <TurnPanel snapshot={snapshot} actions={actions} queuePosition={queuePosition} />;
}

/**
 * Each queued turn's place: how many of the session's turns before it are unfinished (the
 * server's rule). Counted here because a turn's live updates do not carry its place.
 */
function queuePositions(snapshots: TurnSnapshot[]): Map<string, number> {
  const positions = new Map<string, number>();
  let unfinished = 0;
  for (const { turn } of snapshots) {
    if (turn.status === "queued") positions.set(turn._id, unfinished);
    if (!isFinalTurnStatus(turn.status)) unfinished++;
  }
  return positions;
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

/** Follows the conversation as it grows while the reader is at the bottom; leaves them when they scroll up to read. */
function useFollowing(turnCount: number) {
  const conversation = useRef<HTMLDivElement>(null);
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
    if (turnCount > 0) window.scrollTo(0, document.documentElement.scrollHeight);
    following.current = true;
  }, [turnCount]);
  return conversation;
}

function lastProvider(): string | undefined {
  try {
    return localStorage.getItem(PROVIDER_KEY) ?? undefined;
  } catch {
    return undefined;
  }
}

export function SessionPage({ projectId, sessionId }: { projectId: string; sessionId: string }) {
  const api = useApi();
  const client = useQueryClient();
  const connection = useConnection();
  const turns = useMemo(() => new SessionTurns(sessionId, { api }), [api, sessionId]);
  const stores = useSyncExternalStore(turns.subscribe, turns.getTurns);
  const snapshots = useSnapshots(stores);
  // Drones a live turn of this session waits for, and when the turn is interrupted without them.
  const lostDrones: Record<string, number> = {};
  for (const { turn, view } of snapshots) {
    const offline = droneOfflineOf(turn, view);
    if (offline && turn.drone) lostDrones[turn.drone] = offline.until;
  }
  const [loadError, setLoadError] = useState<unknown>(null);
  const [loaded, setLoaded] = useState(false);
  const conversation = useFollowing(stores.length);
  const [, navigate] = useLocation();

  const session = useSession(sessionId);
  const project = useProject(projectId);
  const providers = useProviders();
  const drones = useDrones();
  const update = useUpdateSession(sessionId);
  const remove = useDeleteSession(projectId, sessionId);
  const commands = useSessionCommands(projectId, sessionId);
  const readSessionAgain = useMemo(
    () => () => void client.invalidateQueries({ queryKey: keys.session(sessionId) }),
    [client, sessionId],
  );

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

  // Each turn that ends moves the branch: read where the worktree stands again.
  const ended = snapshots.filter((snapshot) => isFinalTurnStatus(snapshot.turn.status)).length;
  useEffect(() => {
    if (ended > 0) readSessionAgain();
  }, [ended, readSessionAgain]);

  const cancel = useCancelTurn();
  const resume = useResumeTurn(turns);
  const decide = useDecideApproval(sessionId);
  const revert = useRevertTurn(turns);
  const edit = useEditTurn(turns);
  const steer = useSteerTurn();
  const rewind = useRewindSession(sessionId, turns);
  const fork = useForkSession(projectId, sessionId);
  const resend = useResendTurn(sessionId, turns);
  const create = useCreateTurn(sessionId, turns);
  const lastTurnId = stores.at(-1)?.id;
  const actionsFor = (store: TurnStore): TurnActions => ({
    cancel: () => cancel.mutateAsync(store.id),
    resume: async () => void (await resume.mutateAsync(store.id)),
    decide: (approvalId, approve, alwaysAllow, input) =>
      decide.mutateAsync({ turnId: store.id, approvalId, approve, alwaysAllow, input }),
    revert: () => revert.mutateAsync(store.id),
    loadEvents: () => void store.loadEvents(),
    edit: async (prompt) => void (await edit.mutateAsync({ turnId: store.id, prompt })),
    rewind: async () => void (await rewind.mutateAsync(store.id)),
    fork: async () => {
      const forked = await fork.mutateAsync(store.id);
      navigate(`/projects/${projectId}/sessions/${forked._id}`);
    },
    ...(store.id === lastTurnId
      ? {
          resend: (prompt: string) =>
            resend.mutateAsync({
              turnId: store.id,
              prompt,
              providerId: store.getSnapshot().turn.provider,
            }),
        }
      : {}),
  });
  // The turn a steering message goes to: the session's oldest one that a drone has or will
  // take next (queued turns behind it wait for it).
  const running = snapshots.find(
    (snapshot) =>
      !isFinalTurnStatus(snapshot.turn.status) &&
      !(snapshot.turn.waiting && "position" in snapshot.turn.waiting),
  )?.turn;

  const positions = queuePositions(snapshots);
  const providerList = providers.data ?? [];
  const now = Date.now();

  return (
    <div className="page session-page">
      <SessionHeader
        projectId={projectId}
        projectName={project.data?.name}
        session={session.data}
        onDelivered={(turnId) => {
          void api
            .getTurn(turnId)
            .then(({ turn }) => turns.upsert(turn))
            .catch(() => undefined);
        }}
      />
      <ErrorNote
        error={session.error}
        title="Could not load the session"
        onRetry={() => void session.refetch()}
      />
      {session.data ? (
        <SessionSettings
          key={`${session.data.name}:${session.data.mode}:${session.data.approval}`}
          session={session.data}
          onSave={update.mutateAsync}
          onDelete={async () => {
            await remove.mutateAsync();
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
          <TurnItem
            key={store.id}
            store={store}
            actions={actionsFor(store)}
            queuePosition={positions.get(store.id)}
          />
        ))}
      </div>
      <div className="composer-dock">
        <ErrorNote
          error={providers.error}
          title="Could not load providers"
          onRetry={() => void providers.refetch()}
        />
        {providers.data ? (
          <Composer
            key={providerList.map((provider) => provider._id).join(",")}
            providers={providerList}
            drones={drones.data ?? []}
            lostDrones={lostDrones}
            commands={commands.data ?? []}
            defaultProviderId={lastProvider()}
            disabled={providerList.length === 0}
            disabledReason={
              providerList.length === 0 ? "Add a provider first (Providers page)." : undefined
            }
            {...(running
              ? {
                  onSteer: (text: string, interrupt: boolean) =>
                    steer.mutateAsync({ turnId: running._id, text, interrupt }),
                }
              : {})}
            onSend={async (submission) => {
              await create.mutateAsync(submission);
              try {
                localStorage.setItem(PROVIDER_KEY, submission.providerId);
              } catch {
                // Remembering the provider is a convenience only.
              }
            }}
          />
        ) : null}
      </div>
    </div>
  );
}
