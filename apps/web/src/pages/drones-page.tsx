// Drones: the live fleet (online, busy, capacity, version, last seen), adding one by its
// registration command, and revoking one.
import type { Drone, RegistrationTokenResponse } from "@gadget/protocol";
import { useEffect, useRef, useState } from "react";
import { useApi } from "../app/auth.tsx";
import { useConnection } from "../app/live.tsx";
import { useLoader } from "../app/use-loader.ts";
import { CopyButton } from "../components/copy-button.tsx";
import { ErrorNote } from "../components/error-note.tsx";
import { formatAgo, timeOf } from "../lib/format.ts";

/** Merges a drone_update into the list: replace by id, or add a new drone at the top. */
export function mergeDrone(drones: Drone[], drone: Drone): Drone[] {
  const index = drones.findIndex((item) => item._id === drone._id);
  if (index < 0) return [drone, ...drones];
  const next = drones.slice();
  next[index] = drone;
  return next;
}

function useTicker(intervalMs: number): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), intervalMs);
    return () => clearInterval(timer);
  }, [intervalMs]);
  return now;
}

/** The table of drones; `onRevoke` rejects with an error to show. */
export function DroneTable({
  drones,
  onRevoke,
  onLabels,
  highlight,
}: {
  drones: Drone[];
  onRevoke: (drone: Drone) => Promise<void>;
  /** Saves the user's labels of a drone (its own `os`, `arch`, `sandbox` stay). */
  onLabels?: (drone: Drone, labels: string[]) => Promise<void>;
  highlight?: ReadonlySet<string>;
}) {
  const now = useTicker(15_000);
  const [confirming, setConfirming] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  if (drones.length === 0) {
    return (
      <p className="empty">
        No drones yet. A drone runs the agent on your machine: add one with the button above.
      </p>
    );
  }
  return (
    <>
      <ErrorNote error={error} title="Could not revoke" />
      <table className="table">
        <thead>
          <tr>
            <th>Name</th>
            <th>Status</th>
            <th>Load</th>
            <th>Labels</th>
            <th>Version</th>
            <th>Sandbox</th>
            <th>Host</th>
            <th>Last seen</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {drones.map((drone) => (
            <tr key={drone._id} className={highlight?.has(drone._id) ? "row-new" : undefined}>
              <td>
                <strong>{drone.name}</strong>
              </td>
              <td data-label="Status">
                <span className={`pill pill-${drone.status}`}>{drone.status}</span>
                {drone.ephemeral ? (
                  <span className="pill" title="Takes one turn, then exits and is unregistered">
                    ephemeral
                  </span>
                ) : null}
              </td>
              <td data-label="Load">
                {drone.activeTurns > 0 ? (
                  <span className="pill pill-busy">
                    busy {drone.activeTurns}/{drone.capacity}
                  </span>
                ) : (
                  <span className="muted">idle · capacity {drone.capacity}</span>
                )}
              </td>
              <td data-label="Labels">
                <LabelsCell drone={drone} onSave={onLabels} />
              </td>
              <td data-label="Version">
                {drone.version ?? "–"}
                {drone.outdated ? (
                  <span
                    className="pill pill-unsandboxed"
                    title="Older than the server: upgrade gadget-drone"
                  >
                    upgrade
                  </span>
                ) : null}
              </td>
              <td data-label="Sandbox">
                <SandboxCell sandbox={drone.sandbox} />
              </td>
              <td data-label="Host" className="muted">
                {[drone.hostname, drone.platform].filter(Boolean).join(" · ") || "–"}
              </td>
              <td
                data-label="Last seen"
                className="muted"
                title={drone.lastSeenAt ? String(drone.lastSeenAt) : ""}
              >
                {drone.status === "online"
                  ? "now"
                  : formatAgo(
                      timeOf(drone.lastSeenAt) ? new Date(timeOf(drone.lastSeenAt)!) : null,
                      now,
                    )}
              </td>
              <td className="right">
                {confirming === drone._id ? (
                  <>
                    <button
                      type="button"
                      className="button small danger"
                      onClick={async () => {
                        setError(null);
                        try {
                          await onRevoke(drone);
                        } catch (caught) {
                          setError(caught);
                        }
                        setConfirming(null);
                      }}
                    >
                      Revoke {drone.name}
                    </button>{" "}
                    <button
                      type="button"
                      className="button small ghost"
                      onClick={() => setConfirming(null)}
                    >
                      Keep
                    </button>
                  </>
                ) : (
                  <button
                    type="button"
                    className="button small ghost"
                    onClick={() => setConfirming(drone._id)}
                  >
                    Revoke…
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

function expiresIn(expiresAt: number, now: number): string {
  const seconds = Math.max(0, Math.round((expiresAt - now) / 1000));
  if (seconds === 0) return "expired";
  return `expires in ${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, "0")}`;
}

/** The registration command with its copy button and a live expiry countdown. */
export function RegistrationCommand({
  registration,
  onNewToken,
}: {
  registration: RegistrationTokenResponse;
  onNewToken: () => void;
}) {
  const now = useTicker(1000);
  const expiresAt = timeOf(registration.expiresAt) ?? now;
  const expired = expiresAt <= now;
  return (
    <div className="card register-card">
      <h3>Run this on the machine that should work for you</h3>
      <p className="muted small">
        It registers a drone with this server. The token works once and{" "}
        <strong>{expiresIn(expiresAt, now)}</strong> (at {new Date(expiresAt).toLocaleTimeString()}
        ). Then start it with <code>gadget-drone start</code>.
      </p>
      <div className="command-row">
        <pre className="command" data-testid="register-command">
          {registration.command}
        </pre>
        <CopyButton text={registration.command} />
      </div>
      {expired ? (
        <button type="button" className="button small" onClick={onNewToken}>
          Make a new command
        </button>
      ) : (
        <p className="muted small">
          Waiting for the drone to connect… it appears below the moment it does.
        </p>
      )}
    </div>
  );
}

export function DronesPage() {
  const api = useApi();
  const connection = useConnection();
  const drones = useLoader(() => api.listDrones().then((answer) => answer.drones), [api]);
  const [registration, setRegistration] = useState<RegistrationTokenResponse | null>(null);
  const [registering, setRegistering] = useState(false);
  const [registerError, setRegisterError] = useState<unknown>(null);
  const [fresh, setFresh] = useState<Set<string>>(new Set());
  const known = useRef(new Set<string>());
  const { setData } = drones;

  useEffect(() => {
    for (const drone of drones.data ?? []) known.current.add(drone._id);
  }, [drones.data]);

  useEffect(() => {
    if (!connection) return;
    return connection.onDrone((drone) => {
      if (!known.current.has(drone._id)) {
        known.current.add(drone._id);
        setFresh((current) => new Set(current).add(drone._id));
        // The new drone has used the one-time token: the command is no longer needed.
        setRegistration(null);
      }
      setData((current) => mergeDrone(current ?? [], drone));
    });
  }, [connection, setData]);

  // Reconnecting may have missed updates: read the list again.
  useEffect(() => {
    if (!connection) return;
    return connection.onState((state) => {
      if (state === "connected") drones.reload();
    });
  }, [connection, drones.reload]);

  const addDrone = async () => {
    setRegistering(true);
    setRegisterError(null);
    try {
      setRegistration(await api.createRegistrationToken());
    } catch (caught) {
      setRegisterError(caught);
    } finally {
      setRegistering(false);
    }
  };

  return (
    <div className="page">
      <div className="page-head">
        <h1>Drones</h1>
        <span className="spacer" />
        <button type="button" className="button primary" onClick={addDrone} disabled={registering}>
          {registering ? "Making a command…" : "Add a drone"}
        </button>
      </div>
      <ErrorNote error={registerError} title="Could not make a registration command" />
      {registration ? (
        <RegistrationCommand registration={registration} onNewToken={addDrone} />
      ) : null}
      {drones.error ? (
        <ErrorNote error={drones.error} title="Could not load drones" onRetry={drones.reload} />
      ) : drones.data ? (
        <DroneTable
          drones={drones.data}
          highlight={fresh}
          onRevoke={async (drone) => {
            await api.revokeDrone(drone._id);
            setData((current) => (current ?? []).filter((item) => item._id !== drone._id));
          }}
          onLabels={async (drone, labels) => {
            const { drone: saved } = await api.updateDrone(drone._id, { labels });
            setData((current) => mergeDrone(current ?? [], saved));
          }}
        />
      ) : (
        <p className="muted">Loading drones…</p>
      )}
    </div>
  );
}

/** The labels automatic to every drone: shown, never edited. */
const automaticKeys = new Set(["os", "arch", "sandbox"]);

/** A drone's labels as pills; "Edit" changes the user's (space-separated `key=value` or `key`). */
function LabelsCell({
  drone,
  onSave,
}: {
  drone: Drone;
  onSave: ((drone: Drone, labels: string[]) => Promise<void>) | undefined;
}) {
  const own = drone.labels.filter((label) => !automaticKeys.has(label.split("=")[0] ?? ""));
  const [editing, setEditing] = useState(false);
  const [text, setText] = useState(own.join(" "));
  const [error, setError] = useState<unknown>(null);
  if (editing && onSave) {
    return (
      <form
        className="labels-form"
        aria-label={`Labels of ${drone.name}`}
        onSubmit={async (event) => {
          event.preventDefault();
          setError(null);
          try {
            await onSave(drone, text.split(/\s+/).filter(Boolean));
            setEditing(false);
          } catch (caught) {
            setError(caught);
          }
        }}
      >
        <input
          aria-label="Labels"
          value={text}
          placeholder="gpu region=eu"
          onChange={(event) => setText(event.target.value)}
        />
        <button type="submit" className="button small">
          Save
        </button>
        <ErrorNote error={error} title="Labels not saved" />
      </form>
    );
  }
  return (
    <span className="labels">
      {drone.labels.length === 0 ? <span className="muted">–</span> : null}
      {drone.labels.map((label) => (
        <code key={label} className={automaticKeys.has(label.split("=")[0] ?? "") ? "muted" : ""}>
          {label}
        </code>
      ))}
      {onSave ? (
        <button
          type="button"
          className="button small ghost"
          onClick={() => {
            setText(own.join(" "));
            setEditing(true);
          }}
        >
          Edit
        </button>
      ) : null}
    </span>
  );
}

/** What confines a drone's commands; a drone started with --no-sandbox is marked "unsandboxed". */
function SandboxCell({ sandbox }: { sandbox: Drone["sandbox"] }) {
  if (!sandbox) return <span className="muted">–</span>;
  if (sandbox.kind === "none") {
    return (
      <span
        className="pill pill-unsandboxed"
        title="Started with --no-sandbox: the agent's commands run as the drone's user, with its files and network"
      >
        unsandboxed
      </span>
    );
  }
  return (
    <span title={`network ${sandbox.network}`}>
      {sandbox.kind}
      {sandbox.version ? <span className="muted"> {sandbox.version}</span> : null}
    </span>
  );
}
