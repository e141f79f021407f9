// Webhooks: URLs told when the user's turns finish, fail or wait for approval. Adding one shows
// its signing secret once; each webhook can be sent a test and shows its recent deliveries.
import {
  type CreateWebhookResponse,
  type Webhook,
  type WebhookDelivery,
  type WebhookEvent,
  webhookEvents,
} from "@gadget/protocol";
import { type FormEvent, useState } from "react";
import { useApi } from "../app/auth.tsx";
import { useLoader } from "../app/use-loader.ts";
import { CopyButton } from "../components/copy-button.tsx";
import { ErrorNote } from "../components/error-note.tsx";
import { formatAgo } from "../lib/format.ts";

/** What each event means, in the checkbox's words. */
const eventWords: Record<WebhookEvent, string> = {
  "turn.completed": "a turn completed",
  "turn.failed": "a turn failed",
  "turn.cancelled": "a turn was cancelled",
  "turn.interrupted": "a turn was interrupted (its drone went away)",
  "turn.awaiting_approval": "a turn waits for your approval",
};

const statusPill: Record<WebhookDelivery["status"], string> = {
  delivered: "pill pill-online",
  pending: "pill pill-busy",
  failed: "pill pill-unsandboxed",
};

function AddWebhook({ onCreated }: { onCreated: (created: CreateWebhookResponse) => void }) {
  const api = useApi();
  const [url, setUrl] = useState("");
  const [events, setEvents] = useState<Set<WebhookEvent>>(
    new Set(["turn.completed", "turn.failed", "turn.awaiting_approval"]),
  );
  const [saving, setSaving] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const toggle = (event: WebhookEvent) =>
    setEvents((current) => {
      const next = new Set(current);
      if (next.has(event)) next.delete(event);
      else next.add(event);
      return next;
    });
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setSaving(true);
    setError(null);
    try {
      // In the protocol's order, whatever order they were ticked in.
      const chosen = webhookEvents.filter((name) => events.has(name));
      onCreated(await api.createWebhook({ url: url.trim(), events: chosen }));
      setUrl("");
    } catch (caught) {
      setError(caught);
    }
    setSaving(false);
  };
  return (
    <form className="card form-grid" onSubmit={submit} aria-label="Add a webhook">
      <h2>Add a webhook</h2>
      <p className="muted small">
        Each delivery is a JSON POST signed with the webhook's secret: check{" "}
        <code>X-Gadget-Signature: sha256=…</code>, the HMAC-SHA256 of the raw body.
      </p>
      <label className="field">
        <span>URL</span>
        <input
          required
          type="url"
          value={url}
          onChange={(change) => setUrl(change.target.value)}
          placeholder="https://example.com/gadget-hook"
        />
      </label>
      <fieldset className="field webhook-events">
        <span>Send when</span>
        {webhookEvents.map((name) => (
          <label key={name}>
            <input type="checkbox" checked={events.has(name)} onChange={() => toggle(name)} />{" "}
            {eventWords[name]} <code className="muted small">{name}</code>
          </label>
        ))}
      </fieldset>
      <ErrorNote error={error} title="Could not add the webhook" />
      <div className="form-actions">
        <button type="submit" className="button" disabled={saving || events.size === 0}>
          {saving ? "Adding…" : "Add webhook"}
        </button>
      </div>
    </form>
  );
}

function NewSecret({ created, onDone }: { created: CreateWebhookResponse; onDone: () => void }) {
  return (
    <div className="card register-card" role="status">
      <h3>Copy the signing secret now</h3>
      <p className="muted small">
        It signs every delivery to <code>{created.webhook.url}</code>. It is shown this once and
        cannot be read again; delete the webhook and add it again to get a new one.
      </p>
      <div className="command-row">
        <pre className="command" data-testid="webhook-secret">
          {created.secret}
        </pre>
        <CopyButton text={created.secret} />
      </div>
      <button type="button" className="button small ghost" onClick={onDone}>
        I have copied it
      </button>
    </div>
  );
}

function Deliveries({ webhookId, generation }: { webhookId: string; generation: number }) {
  const api = useApi();
  const deliveries = useLoader(
    () => api.listWebhookDeliveries(webhookId).then((answer) => answer.deliveries),
    [api, webhookId, generation],
  );
  if (deliveries.error) {
    return (
      <ErrorNote
        error={deliveries.error}
        title="Could not load deliveries"
        onRetry={deliveries.reload}
      />
    );
  }
  if (!deliveries.data) return <p className="muted small">Loading deliveries…</p>;
  if (deliveries.data.length === 0) return <p className="empty">No deliveries yet.</p>;
  const now = Date.now();
  return (
    <>
      <table className="table" aria-label="Recent deliveries">
        <thead>
          <tr>
            <th>Event</th>
            <th>Status</th>
            <th>Attempts</th>
            <th>Last answer</th>
            <th>When</th>
          </tr>
        </thead>
        <tbody>
          {deliveries.data.map((delivery) => (
            <tr key={delivery._id}>
              <td data-label="Event">
                <code>{delivery.event}</code>
              </td>
              <td data-label="Status">
                <span className={statusPill[delivery.status]}>{delivery.status}</span>
              </td>
              <td data-label="Attempts">{delivery.attempts}</td>
              <td data-label="Last answer" className="muted">
                {delivery.lastError ??
                  (delivery.lastStatusCode ? `HTTP ${delivery.lastStatusCode}` : "–")}
              </td>
              <td
                data-label="When"
                className="muted"
                title={new Date(delivery.createdAt).toLocaleString()}
              >
                {formatAgo(delivery.createdAt, now)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <button type="button" className="button small ghost" onClick={deliveries.reload}>
        Refresh
      </button>
    </>
  );
}

function WebhookCard({ webhook, onDeleted }: { webhook: Webhook; onDeleted: () => void }) {
  const api = useApi();
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [generation, setGeneration] = useState(0);
  const act = async (work: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await work();
    } catch (caught) {
      setError(caught);
    }
    setBusy(false);
  };
  return (
    <li className="card" aria-label={webhook.url}>
      <div className="field-row">
        <div>
          <strong className="wrap-anywhere">{webhook.url}</strong>
          <p className="muted small">{webhook.events.join(" · ")}</p>
        </div>
        <span className="spacer" />
        <button
          type="button"
          className="button small"
          disabled={busy}
          onClick={() =>
            act(async () => {
              await api.testWebhook(webhook._id);
              setGeneration((value) => value + 1);
            })
          }
        >
          Send test
        </button>
        {confirming ? (
          <>
            <button
              type="button"
              className="button small danger"
              disabled={busy}
              onClick={() =>
                act(async () => {
                  await api.deleteWebhook(webhook._id);
                  onDeleted();
                })
              }
            >
              Delete this webhook
            </button>
            <button
              type="button"
              className="button small ghost"
              onClick={() => setConfirming(false)}
            >
              Keep
            </button>
          </>
        ) : (
          <button type="button" className="button small ghost" onClick={() => setConfirming(true)}>
            Delete…
          </button>
        )}
      </div>
      <ErrorNote error={error} title="That did not work" />
      <h3>Recent deliveries</h3>
      <Deliveries webhookId={webhook._id} generation={generation} />
    </li>
  );
}

export function WebhooksPage() {
  const api = useApi();
  const webhooks = useLoader(() => api.listWebhooks().then((answer) => answer.webhooks), [api]);
  const [created, setCreated] = useState<CreateWebhookResponse | null>(null);
  const { setData } = webhooks;
  return (
    <div className="page">
      <div className="page-head">
        <h1>Webhooks</h1>
      </div>
      <p className="muted">
        Be told without looking: this server POSTs to your URL when one of your turns finishes,
        fails or waits for your approval, and retries until your URL answers 2xx.
      </p>
      {created ? <NewSecret created={created} onDone={() => setCreated(null)} /> : null}
      <AddWebhook
        onCreated={(answer) => {
          setCreated(answer);
          setData((current) => [...(current ?? []), answer.webhook]);
        }}
      />
      {webhooks.error ? (
        <ErrorNote
          error={webhooks.error}
          title="Could not load webhooks"
          onRetry={webhooks.reload}
        />
      ) : webhooks.data ? (
        webhooks.data.length === 0 ? (
          <p className="empty">No webhooks yet.</p>
        ) : (
          <ul className="webhook-list">
            {webhooks.data.map((webhook) => (
              <WebhookCard
                key={webhook._id}
                webhook={webhook}
                onDeleted={() =>
                  setData((current) => current?.filter((item) => item._id !== webhook._id))
                }
              />
            ))}
          </ul>
        )
      ) : (
        <p className="muted">Loading webhooks…</p>
      )}
    </div>
  );
}
