// Webhooks: URLs told when the user's turns finish, fail or wait for approval. Adding one shows
// its signing secret once; each webhook can be sent a test and shows its recent deliveries.
import {
  type CreateWebhookBody,
  type CreateWebhookResponse,
  createWebhookBodySchema,
  type Webhook,
  type WebhookDelivery,
  type WebhookEvent,
  webhookEvents,
} from "@gadget/protocol";
import { zodResolver } from "@hookform/resolvers/zod";
import { useMutation } from "@tanstack/react-query";
import { useForm } from "react-hook-form";
import { z } from "zod";
import { ConfirmButton } from "../components/confirm-button.tsx";
import { CopyButton } from "../components/copy-button.tsx";
import { ErrorNote } from "../components/error-note.tsx";
import {
  useCreateWebhook,
  useDeleteWebhook,
  useDeliveries,
  useTestWebhook,
  useWebhooks,
} from "../data/webhooks.ts";
import { Field } from "../forms/field.tsx";
import { showServerProblems } from "../forms/server-problems.ts";
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

const shape = createWebhookBodySchema.shape;
const webhookFieldsSchema = z.object({
  url: z.string().trim().pipe(shape.url),
  // In the protocol's order, whatever order they were ticked in.
  events: z
    .array(z.string())
    .transform((chosen) => webhookEvents.filter((name) => chosen.includes(name)))
    .pipe(shape.events),
});
type WebhookFields = z.input<typeof webhookFieldsSchema>;

function AddWebhook({ onCreate }: { onCreate: (body: CreateWebhookBody) => Promise<unknown> }) {
  const form = useForm<WebhookFields, unknown, CreateWebhookBody>({
    resolver: zodResolver(webhookFieldsSchema),
    // Every way a turn ends or stops for the user: an interrupted or cancelled turn is news too.
    defaultValues: { url: "", events: [...webhookEvents] },
  });
  const errors = form.formState.errors;
  const create = useMutation({
    mutationFn: onCreate,
    onSuccess: () => form.resetField("url"),
    onError: (error) => showServerProblems(form, error),
  });
  const chosen = form.watch("events");
  return (
    <form
      className="card form-grid"
      onSubmit={form.handleSubmit((body) => create.mutate(body))}
      aria-label="Add a webhook"
    >
      <h2>Add a webhook</h2>
      <p className="muted small">
        Each delivery is a JSON POST signed with the webhook's secret: check{" "}
        <code>X-Gadget-Signature: sha256=…</code>, the HMAC-SHA256 of the raw body.
      </p>
      <Field label="URL" error={errors.url}>
        <input
          required
          type="url"
          {...form.register("url")}
          placeholder="https://example.com/gadget-hook"
        />
      </Field>
      <fieldset className="field webhook-events">
        <span>Send when</span>
        {webhookEvents.map((name) => (
          <label key={name}>
            <input type="checkbox" value={name} {...form.register("events")} /> {eventWords[name]}{" "}
            <code className="muted small">{name}</code>
          </label>
        ))}
        {errors.events?.message ? (
          <small className="field-problem">{errors.events.message}</small>
        ) : null}
      </fieldset>
      <ErrorNote error={create.error} title="Could not add the webhook" />
      <div className="form-actions">
        <button type="submit" className="button" disabled={create.isPending || chosen.length === 0}>
          {create.isPending ? "Adding…" : "Add webhook"}
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

function Deliveries({ webhookId }: { webhookId: string }) {
  const deliveries = useDeliveries(webhookId);
  const refresh = () => void deliveries.refetch();
  if (deliveries.error) {
    return (
      <ErrorNote error={deliveries.error} title="Could not load deliveries" onRetry={refresh} />
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
      <button type="button" className="button small ghost" onClick={refresh}>
        Refresh
      </button>
    </>
  );
}

function WebhookCard({ webhook }: { webhook: Webhook }) {
  const test = useTestWebhook(webhook._id);
  const remove = useDeleteWebhook(webhook._id);
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
          disabled={test.isPending}
          onClick={() => test.mutate()}
        >
          Send test
        </button>
        <ConfirmButton
          label="Delete…"
          tone="ghost"
          question="Delete this webhook? Nothing more is sent to it."
          confirmLabel="Delete this webhook"
          cancelLabel="Keep"
          errorTitle="Could not delete the webhook"
          onConfirm={() => remove.mutateAsync()}
        />
      </div>
      <ErrorNote error={test.error} title="Could not send a test" />
      <h3>Recent deliveries</h3>
      <Deliveries webhookId={webhook._id} />
    </li>
  );
}

export function WebhooksPage() {
  const webhooks = useWebhooks();
  const create = useCreateWebhook();
  return (
    <div className="page">
      <div className="page-head">
        <h1>Webhooks</h1>
      </div>
      <p className="muted">
        Be told without looking: this server POSTs to your URL when one of your turns finishes,
        fails or waits for your approval, and retries until your URL answers 2xx.
      </p>
      {create.data ? <NewSecret created={create.data} onDone={() => create.reset()} /> : null}
      <AddWebhook onCreate={create.mutateAsync} />
      {webhooks.error ? (
        <ErrorNote
          error={webhooks.error}
          title="Could not load webhooks"
          onRetry={() => void webhooks.refetch()}
        />
      ) : webhooks.data ? (
        webhooks.data.length === 0 ? (
          <p className="empty">No webhooks yet.</p>
        ) : (
          <ul className="webhook-list">
            {webhooks.data.map((webhook) => (
              <WebhookCard key={webhook._id} webhook={webhook} />
            ))}
          </ul>
        )
      ) : (
        <p className="muted">Loading webhooks…</p>
      )}
    </div>
  );
}
