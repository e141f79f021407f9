// A project's settings that shape its turns: what the drone's sandbox lets commands reach, the
// commands that verify the agent's work, how the drone names each session's branch, and whether it
// pushes that branch (delivery) under which commit author.
import type { DeliveryMode, NetworkMode, Project, UpdateProjectBody } from "@gadget/protocol";
import { type FormEvent, useState } from "react";
import { ErrorNote } from "../components/error-note.tsx";

export const networkWords: Record<NetworkMode, string> = {
  none: "No network (default)",
  allowlist: "Only the hosts listed below",
  open: "Open: any host, including this machine's own services",
};

export const deliveryWords: Record<DeliveryMode, string> = {
  workspace: "Keep the branch on the drone (default)",
  branch: "Push the session's branch to origin after every turn",
  "pull-request": "Pull request (for now: pushes the branch, as above)",
};

function sameAuthor(a: Project["commitAuthor"], b: Project["commitAuthor"]): boolean {
  return a?.name === b?.name && a?.email === b?.email;
}

function lines(text: string): string[] {
  return text
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean);
}

/** Network policy, verification commands and branch prefix of one project, saved with `PATCH /api/projects/:id`. */
export function ProjectSettings({
  project,
  onSave,
}: {
  project: Project;
  onSave: (body: UpdateProjectBody) => Promise<void>;
}) {
  const [network, setNetwork] = useState<NetworkMode>(project.network);
  const [hosts, setHosts] = useState(project.allowedHosts.join("\n"));
  const [verify, setVerify] = useState(project.verifyCommands.join("\n"));
  const [branchPrefix, setBranchPrefix] = useState(project.branchPrefix);
  const [delivery, setDelivery] = useState<DeliveryMode>(project.delivery);
  const [authorName, setAuthorName] = useState(project.commitAuthor?.name ?? "");
  const [authorEmail, setAuthorEmail] = useState(project.commitAuthor?.email ?? "");
  const [saving, setSaving] = useState(false);
  const [saved, setSaved] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setSaving(true);
    setSaved(false);
    setError(null);
    // Both empty: the drone machine's own git identity.
    const author =
      authorName.trim() || authorEmail.trim()
        ? { name: authorName.trim(), email: authorEmail.trim() }
        : null;
    try {
      await onSave({
        network,
        allowedHosts: lines(hosts),
        verifyCommands: lines(verify),
        // Sent only when changed: a project stored before the field existed keeps the default.
        ...(branchPrefix === project.branchPrefix ? {} : { branchPrefix: branchPrefix.trim() }),
        ...(delivery === project.delivery ? {} : { delivery }),
        ...(sameAuthor(author, project.commitAuthor) ? {} : { commitAuthor: author }),
      });
      setSaved(true);
    } catch (caught) {
      setError(caught);
    } finally {
      setSaving(false);
    }
  };
  return (
    <form className="form-grid" onSubmit={submit} aria-label="Project settings">
      <label className="field">
        <span>Network for the agent's commands</span>
        <select
          value={network}
          onChange={(event) => {
            setNetwork(event.target.value as NetworkMode);
            setSaved(false);
          }}
        >
          {(Object.keys(networkWords) as NetworkMode[]).map((mode) => (
            <option key={mode} value={mode}>
              {networkWords[mode]}
            </option>
          ))}
        </select>
      </label>
      {network === "allowlist" ? (
        <label className="field">
          <span>
            Allowed hosts, one per line (e.g. registry.npmjs.org, *.github.com, 127.0.0.1:4873). An
            empty list allows none.
          </span>
          <textarea
            rows={4}
            value={hosts}
            onChange={(event) => {
              setHosts(event.target.value);
              setSaved(false);
            }}
            aria-label="Allowed hosts"
          />
        </label>
      ) : null}
      <label className="field">
        <span>Verification commands, one per line (run after each turn that changed files)</span>
        <textarea
          rows={2}
          value={verify}
          onChange={(event) => {
            setVerify(event.target.value);
            setSaved(false);
          }}
          aria-label="Verification commands"
        />
      </label>
      <label className="field">
        <span>
          Branch prefix: each session works on its own branch, named this prefix, the session's name
          and the start of its id (e.g. gadget/fix-login-665f1c). New sessions use it.
        </span>
        <input
          value={branchPrefix}
          onChange={(event) => {
            setBranchPrefix(event.target.value);
            setSaved(false);
          }}
          aria-label="Branch prefix"
        />
      </label>
      <label className="field">
        <span>
          Delivery: what happens to a session's branch. Pushing uses the drone machine's own git
          credentials.
        </span>
        <select
          value={delivery}
          onChange={(event) => {
            setDelivery(event.target.value as DeliveryMode);
            setSaved(false);
          }}
          aria-label="Delivery"
        >
          {(Object.keys(deliveryWords) as DeliveryMode[]).map((mode) => (
            <option key={mode} value={mode}>
              {deliveryWords[mode]}
            </option>
          ))}
        </select>
      </label>
      <label className="field">
        <span>Commit author name (empty: the drone machine's git identity)</span>
        <input
          value={authorName}
          onChange={(event) => {
            setAuthorName(event.target.value);
            setSaved(false);
          }}
          aria-label="Commit author name"
        />
      </label>
      <label className="field">
        <span>Commit author email</span>
        <input
          value={authorEmail}
          onChange={(event) => {
            setAuthorEmail(event.target.value);
            setSaved(false);
          }}
          aria-label="Commit author email"
        />
      </label>
      <ErrorNote error={error} title="Could not save the settings" />
      <div className="form-actions">
        {saved ? <span className="muted small">Saved; the next turn uses them.</span> : null}
        <button type="submit" className="button primary small" disabled={saving}>
          {saving ? "Saving…" : "Save settings"}
        </button>
      </div>
    </form>
  );
}
