// Forge events on a project's settings: whether issues and comments on the forge start work, with
// which trigger word, label and assignee; the webhook URL and a new secret to paste into the
// forge (the secret shown once); and the latest deliveries with what each did.
import {
  type ForgeEventDelivery,
  type ForgeEventsSecretAnswer,
  forgeEventsSettingsSchema,
  type Project,
  type UpdateProjectBody,
} from "@gadget/protocol";
import { useState } from "react";
import { CopyButton } from "../components/copy-button.tsx";
import { ErrorNote } from "../components/error-note.tsx";
import { useForgeEvents, useMakeForgeEventsSecret } from "../data/forge-events.ts";
import { formatAgo } from "../lib/format.ts";

const outcomeWords: Record<ForgeEventDelivery["outcome"], string> = {
  started: "started a turn",
  followed_up: "followed up",
  ignored: "ignored",
  refused: "refused",
};

export interface ForgeEventsPanelProps {
  project: Project;
  onSave: (body: UpdateProjectBody) => Promise<unknown>;
  onMakeSecret: () => Promise<ForgeEventsSecretAnswer>;
  /** The latest deliveries; undefined while loading. */
  deliveries: ForgeEventDelivery[] | undefined;
}

/** Shown for a project with a forge. */
export function ForgeEventsPanel({
  project,
  onSave,
  onMakeSecret,
  deliveries,
}: ForgeEventsPanelProps) {
  const forge = project.forge;
  const events = forge?.events;
  const [enabled, setEnabled] = useState(events?.enabled ?? false);
  const [trigger, setTrigger] = useState(events?.trigger ?? "@gadget");
  const [label, setLabel] = useState(events?.label ?? "gadget");
  const [assignee, setAssignee] = useState(events?.assignee ?? "");
  const [reviewFollowUps, setReviewFollowUps] = useState(events?.reviewFollowUps ?? true);
  const [checkFollowUps, setCheckFollowUps] = useState(events?.checkFollowUps ?? false);
  const [problem, setProblem] = useState<unknown>(null);
  const [secret, setSecret] = useState<ForgeEventsSecretAnswer | null>(null);
  if (!forge) return null;

  const save = async () => {
    const parsed = forgeEventsSettingsSchema.safeParse({
      enabled,
      trigger,
      label,
      assignee: assignee.trim() || null,
      reviewFollowUps,
      checkFollowUps,
    });
    if (!parsed.success) {
      setProblem(new Error(parsed.error.issues.map((issue) => issue.message).join("; ")));
      return;
    }
    setProblem(null);
    try {
      await onSave({ forge: { kind: forge.kind, apiUrl: forge.apiUrl, events: parsed.data } });
    } catch (error) {
      setProblem(error);
    }
  };

  return (
    <section className="card form-grid" aria-label="Forge events">
      <h3>Work that starts on the forge</h3>
      <label>
        <input
          type="checkbox"
          checked={enabled}
          onChange={(event) => setEnabled(event.target.checked)}
        />{" "}
        Issues and comments on the forge start turns (only from people with write access)
      </label>
      <label className="field">
        <span>Trigger word in a comment</span>
        <input value={trigger} onChange={(event) => setTrigger(event.target.value)} />
      </label>
      <label className="field">
        <span>Label that starts an issue's turn</span>
        <input value={label} onChange={(event) => setLabel(event.target.value)} />
      </label>
      <label className="field">
        <span>Assignee that starts an issue's turn (optional)</span>
        <input value={assignee} onChange={(event) => setAssignee(event.target.value)} />
      </label>
      <label>
        <input
          type="checkbox"
          checked={reviewFollowUps}
          onChange={(event) => setReviewFollowUps(event.target.checked)}
        />{" "}
        Review comments with the trigger follow up on the session's pull request
      </label>
      <label>
        <input
          type="checkbox"
          checked={checkFollowUps}
          onChange={(event) => setCheckFollowUps(event.target.checked)}
        />{" "}
        A check that fails on the session's pull request follows up (two in a row at most)
      </label>
      <ErrorNote error={problem} title="Could not save forge events" />
      <div className="form-actions">
        <button type="button" className="button small" onClick={() => void save()}>
          Save forge events
        </button>
        <button
          type="button"
          className="button small ghost"
          onClick={() => void onMakeSecret().then(setSecret, (error: unknown) => setProblem(error))}
        >
          {forge.hasEventsSecret ? "Make a new webhook secret" : "Make the webhook secret"}
        </button>
      </div>
      {secret ? (
        <div className="card register-card" role="status" aria-label="Webhook URL and secret">
          <p className="muted small">
            Add a webhook in the forge with this URL and secret (content type JSON). The secret is
            shown this once; a new one replaces it.
          </p>
          <div className="command-row">
            <pre className="command" data-testid="forge-events-url">
              {secret.url}
            </pre>
            <CopyButton text={secret.url} />
          </div>
          <div className="command-row">
            <pre className="command" data-testid="forge-events-secret">
              {secret.secret}
            </pre>
            <CopyButton text={secret.secret} />
          </div>
          <button type="button" className="button small ghost" onClick={() => setSecret(null)}>
            I have copied them
          </button>
        </div>
      ) : null}
      <h4>Latest deliveries</h4>
      {deliveries === undefined ? (
        <p className="muted small">Loading deliveries…</p>
      ) : deliveries.length === 0 ? (
        <p className="empty">No deliveries yet.</p>
      ) : (
        <ul className="plain-list" aria-label="Forge deliveries">
          {deliveries.map((delivery) => (
            <li key={delivery._id}>
              <strong>{outcomeWords[delivery.outcome]}</strong>{" "}
              <code>
                {delivery.event}
                {delivery.action ? `.${delivery.action}` : ""}
              </code>
              {delivery.number ? ` #${delivery.number}` : ""}
              {delivery.sender ? ` by @${delivery.sender}` : ""}: {delivery.reason}{" "}
              <span className="muted small">{formatAgo(delivery.createdAt, Date.now())}</span>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

/** The panel with the project's deliveries and its secret maker, read through the query cache. */
export function ProjectForgeEvents({
  project,
  onSave,
}: {
  project: Project;
  onSave: (body: UpdateProjectBody) => Promise<unknown>;
}) {
  const deliveries = useForgeEvents(project._id, Boolean(project.forge));
  const makeSecret = useMakeForgeEventsSecret(project._id);
  if (!project.forge) return null;
  return (
    <ForgeEventsPanel
      key={JSON.stringify(project.forge.events)}
      project={project}
      onSave={onSave}
      onMakeSecret={makeSecret.mutateAsync}
      deliveries={deliveries.data}
    />
  );
}
