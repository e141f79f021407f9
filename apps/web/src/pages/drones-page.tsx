// Drones: the live fleet (online, busy, capacity, version, last seen), adding one (the panel in
// add-drone-panel.tsx), and revoking one.
import type { Drone } from "@gadget/protocol";
import { automaticLabelKeys, updateDroneBodySchema } from "@gadget/protocol";
import { zodResolver } from "@hookform/resolvers/zod";
import { useMutation } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";
import { useForm } from "react-hook-form";
import { z } from "zod";
import { useConnection } from "../app/live.tsx";
import { useNow } from "../app/use-now.ts";
import { ConfirmButton } from "../components/confirm-button.tsx";
import { ErrorNote } from "../components/error-note.tsx";
import {
  useDronePackage,
  useDrones,
  useRegistrationStatus,
  useRegistrationToken,
  useRevokeDrone,
  useSaveDrone,
} from "../data/drones.ts";
import { showServerProblems } from "../forms/server-problems.ts";
import { wordList } from "../forms/text-values.ts";
import { formatAgo, timeOf } from "../lib/format.ts";
import { AddDronePanel } from "./add-drone-panel.tsx";

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
  const now = useNow({ every: 15_000 });
  if (drones.length === 0) {
    return (
      <p className="empty">
        No drones yet. A drone runs the agent on your machine: add one with the button above.
      </p>
    );
  }
  return (
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
          <th>
            <span className="visually-hidden">Actions</span>
          </th>
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
                  title="Older than the server: run gadget-drone update on it, or start it with --auto-update"
                >
                  upgrade
                </span>
              ) : null}
              {drone.updateRefused ? (
                <p className="small drone-refusal">
                  <span className="pill pill-unsandboxed">update refused</span>{" "}
                  {drone.updateRefused.version}, {formatAgo(drone.updateRefused.at, now)}:{" "}
                  {drone.updateRefused.reason}
                </p>
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
              {drone.status !== "offline"
                ? "now"
                : formatAgo(
                    timeOf(drone.lastSeenAt) ? new Date(timeOf(drone.lastSeenAt)!) : null,
                    now,
                  )}
            </td>
            <td className="right">
              <ConfirmButton
                label="Revoke…"
                tone="ghost"
                question={`Revoke ${drone.name}? Its credential stops working, it is disconnected and its running turns end interrupted.`}
                confirmLabel={`Revoke ${drone.name}`}
                cancelLabel="Keep"
                errorTitle="Could not revoke"
                onConfirm={() => onRevoke(drone)}
              />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function DronesPage() {
  const connection = useConnection();
  const drones = useDrones();
  const registration = useRegistrationToken();
  const revoke = useRevokeDrone();
  const save = useSaveDrone();
  const [fresh, setFresh] = useState<Set<string>>(new Set());
  const known = useRef(new Set<string>());
  const { reset: forgetRegistration } = registration;

  useEffect(() => {
    for (const drone of drones.data ?? []) known.current.add(drone._id);
  }, [drones.data]);

  // The cache takes every update (data/live-cache.ts); the page marks the drones new to it.
  useEffect(() => {
    if (!connection) return;
    return connection.onDrone((drone) => {
      if (known.current.has(drone._id)) return;
      known.current.add(drone._id);
      setFresh((current) => new Set(current).add(drone._id));
    });
  }, [connection]);

  // The token followed until its drone is online: the live list's status wins over the poll's.
  const polled = useRegistrationStatus(
    registration.data?._id,
    (droneId) => drones.data?.find((drone) => drone._id === droneId)?.status,
  );
  const followed = polled.data?.drone;
  const live = followed && drones.data?.find((drone) => drone._id === followed._id);
  const status = polled.data && {
    ...polled.data,
    ...(followed ? { drone: { ...followed, ...(live ? { status: live.status } : {}) } } : {}),
  };
  const dronePackage = useDronePackage();

  return (
    <div className="page">
      <div className="page-head">
        <h1>Drones</h1>
        <span className="spacer" />
        <button
          type="button"
          className="button primary"
          onClick={() => registration.mutate()}
          disabled={registration.isPending}
        >
          {registration.isPending ? "Making a command…" : "Add a drone"}
        </button>
      </div>
      <ErrorNote error={registration.error} title="Could not make a registration command" />
      {registration.data ? (
        <AddDronePanel
          registration={registration.data}
          status={status}
          dronePackage={dronePackage.data}
          onNewToken={() => registration.mutate()}
          onDone={forgetRegistration}
        />
      ) : null}
      {drones.error ? (
        <ErrorNote
          error={drones.error}
          title="Could not load drones"
          onRetry={() => void drones.refetch()}
        />
      ) : drones.data ? (
        <DroneTable
          drones={drones.data}
          highlight={fresh}
          onRevoke={(drone) => revoke.mutateAsync(drone._id)}
          onLabels={async (drone, labels) => {
            await save.mutateAsync({ droneId: drone._id, body: { labels } });
          }}
        />
      ) : (
        <p className="muted">Loading drones…</p>
      )}
    </div>
  );
}

const automaticKeys: ReadonlySet<string> = new Set(automaticLabelKeys);
const isAutomatic = (label: string) => automaticKeys.has(label.split("=")[0] ?? "");

// Not "labels": a control of that name would stand in for the form's own `labels` property.
const labelsFieldsSchema = z.object({
  typed: wordList(updateDroneBodySchema.shape.labels.unwrap()),
});

/** A drone's labels as pills; "Edit" changes the user's (space-separated `key=value` or `key`). */
function LabelsCell({
  drone,
  onSave,
}: {
  drone: Drone;
  onSave: ((drone: Drone, labels: string[]) => Promise<void>) | undefined;
}) {
  const own = drone.labels.filter((label) => !isAutomatic(label));
  const [editing, setEditing] = useState(false);
  const form = useForm<
    z.input<typeof labelsFieldsSchema>,
    unknown,
    z.output<typeof labelsFieldsSchema>
  >({
    resolver: zodResolver(labelsFieldsSchema),
    defaultValues: { typed: own.join(" ") },
  });
  const save = useMutation({
    mutationFn: (labels: string[]) => (onSave ? onSave(drone, labels) : Promise.resolve()),
    onSuccess: () => setEditing(false),
    onError: (error) => showServerProblems(form, error, { labels: "typed" }),
  });
  if (editing && onSave) {
    const problem = form.formState.errors.typed?.message;
    return (
      <form
        className="labels-form"
        aria-label={`Labels of ${drone.name}`}
        onSubmit={form.handleSubmit(({ typed }) => save.mutate(typed))}
      >
        <input
          aria-label="Labels"
          placeholder="gpu region=eu"
          aria-invalid={problem ? true : undefined}
          {...form.register("typed")}
        />
        <button type="submit" className="button small" disabled={save.isPending}>
          Save
        </button>
        {problem ? <small className="field-problem">{problem}</small> : null}
        <ErrorNote error={save.error} title="Labels not saved" />
      </form>
    );
  }
  return (
    <span className="labels">
      {drone.labels.length === 0 ? <span className="muted">–</span> : null}
      {drone.labels.map((label) => (
        <code key={label} className={isAutomatic(label) ? "muted" : ""}>
          {label}
        </code>
      ))}
      {onSave ? (
        <button
          type="button"
          className="button small ghost"
          onClick={() => {
            form.reset({ typed: own.join(" ") });
            save.reset();
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
