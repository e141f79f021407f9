// A session's settings, under its header: rename it, change its mode and approval, see and remove
// the commands it always allows, and delete it with its turns (asked first).
import type { ApprovalPolicy, ChatSession, TurnMode, UpdateSessionBody } from "@gadget/protocol";
import { type FormEvent, useState } from "react";
import { ConfirmButton } from "../components/confirm-button.tsx";
import { ErrorNote } from "../components/error-note.tsx";

export interface SessionSettingsProps {
  session: Pick<ChatSession, "_id" | "name" | "mode" | "approval" | "allowedCommands">;
  onSave: (body: UpdateSessionBody) => Promise<void>;
  onDelete: () => Promise<void>;
}

export function SessionSettings({ session, onSave, onDelete }: SessionSettingsProps) {
  const [name, setName] = useState(session.name);
  const [mode, setMode] = useState<TurnMode>(session.mode);
  const [approval, setApproval] = useState<ApprovalPolicy>(session.approval);
  const [saving, setSaving] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const allowed = session.allowedCommands ?? [];

  const save = async (body: UpdateSessionBody) => {
    setSaving(true);
    setError(null);
    try {
      await onSave(body);
    } catch (caught) {
      setError(caught);
    } finally {
      setSaving(false);
    }
  };
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const body: UpdateSessionBody = {};
    if (name.trim() !== session.name) body.name = name.trim();
    if (mode !== session.mode) body.mode = mode;
    if (approval !== session.approval) body.approval = approval;
    void save(body);
  };

  return (
    <details className="panel session-settings">
      <summary>
        Settings{" "}
        {allowed.length > 0 ? (
          <span className="muted small">
            {allowed.length} command{allowed.length === 1 ? "" : "s"} always allowed
          </span>
        ) : null}
      </summary>
      <form className="form-grid" onSubmit={submit} aria-label="Session settings">
        <label className="field">
          <span>Name</span>
          <input required value={name} onChange={(event) => setName(event.target.value)} />
        </label>
        <div className="field-row">
          <label className="field">
            <span>Mode</span>
            <select value={mode} onChange={(event) => setMode(event.target.value as TurnMode)}>
              <option value="agent">agent</option>
              <option value="ask">ask</option>
              <option value="tester">tester</option>
              <option value="docser">docser</option>
            </select>
          </label>
          <label className="field">
            <span>Approval</span>
            <select
              value={approval}
              onChange={(event) => setApproval(event.target.value as ApprovalPolicy)}
            >
              <option value="on-write">ask before writes</option>
              <option value="auto">automatic</option>
            </select>
          </label>
        </div>
        <div className="form-actions">
          <button type="submit" className="button primary small" disabled={saving}>
            {saving ? "Saving…" : "Save"}
          </button>
        </div>
      </form>
      <h3 className="small">Always allowed commands</h3>
      {allowed.length === 0 ? (
        <p className="muted small">
          None. On an approval card for a command, “Always allow this command in this session” adds
          it here; it then runs without asking.
        </p>
      ) : (
        <ul className="allowed-commands" aria-label="Always allowed commands">
          {allowed.map((command) => (
            <li key={command}>
              <code>{command}</code>
              <button
                type="button"
                className="button small ghost"
                disabled={saving}
                aria-label={`Stop allowing ${command}`}
                onClick={() =>
                  void save({ allowedCommands: allowed.filter((item) => item !== command) })
                }
              >
                Remove
              </button>
            </li>
          ))}
        </ul>
      )}
      <ErrorNote error={error} title="Could not save the session" />
      <ConfirmButton
        label="Delete session"
        question={`Delete “${session.name}” with all its turns and their steps? This cannot be undone.`}
        confirmLabel="Yes, delete the session"
        errorTitle="Could not delete the session"
        onConfirm={onDelete}
      />
    </details>
  );
}
