// Managing a project from its page: rename it, delete it with everything in it (asked first), and
// "Clone now", which has a drone clone it so its files show before any turn.
import type { Project, ProjectCloneAnswer } from "@gadget/protocol";
import { type FormEvent, useState } from "react";
import { ConfirmButton } from "../components/confirm-button.tsx";
import { ErrorNote } from "../components/error-note.tsx";

const cloneWords: Record<ProjectCloneAnswer["outcome"], string> = {
  cloned: "Cloned",
  "fast-forwarded": "Fetched and fast-forwarded",
  "up-to-date": "Fetched: already up to date",
  "kept-local": "Fetched; the checkout was left as it is",
};

/** "Clone now": a drone clones (or fetches) the project's checkout; says which drone and how it went. */
export function CloneNowButton({
  onClone,
  onCloned,
}: {
  onClone: () => Promise<ProjectCloneAnswer>;
  onCloned: () => void;
}) {
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  return (
    <>
      <button
        type="button"
        className="button small"
        disabled={busy}
        onClick={async () => {
          setBusy(true);
          setError(null);
          setOutcome(null);
          try {
            const answer = await onClone();
            setOutcome(`${cloneWords[answer.outcome]} on ${answer.drone.name}`);
            onCloned();
          } catch (caught) {
            setError(caught);
          } finally {
            setBusy(false);
          }
        }}
      >
        {busy ? "Cloning…" : "Clone now"}
      </button>
      {outcome ? (
        <span className="muted small" role="status">
          {outcome}
        </span>
      ) : null}
      <ErrorNote error={error} title="Could not clone the project" />
    </>
  );
}

/** Rename the project, or delete it with its sessions and turns. */
export function ProjectManage({
  project,
  onRename,
  onDelete,
}: {
  project: Pick<Project, "name">;
  onRename: (name: string) => Promise<void>;
  onDelete: () => Promise<void>;
}) {
  const [name, setName] = useState(project.name);
  const [saving, setSaving] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setSaving(true);
    setError(null);
    try {
      await onRename(name.trim());
    } catch (caught) {
      setError(caught);
    } finally {
      setSaving(false);
    }
  };
  return (
    <div className="project-manage">
      <form className="field-row" onSubmit={submit} aria-label="Rename the project">
        <label className="field">
          <span>Name</span>
          <input required value={name} onChange={(event) => setName(event.target.value)} />
        </label>
        <button
          type="submit"
          className="button small"
          disabled={saving || name.trim() === project.name}
        >
          {saving ? "Renaming…" : "Rename"}
        </button>
      </form>
      <ErrorNote error={error} title="Could not rename the project" />
      <ConfirmButton
        label="Delete project"
        question={`Delete “${project.name}” with all its sessions, turns and their steps? The drones' checkouts stay on disk. This cannot be undone.`}
        confirmLabel="Yes, delete the project"
        errorTitle="Could not delete the project"
        onConfirm={onDelete}
      />
    </div>
  );
}
