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
import { zodResolver } from "@hookform/resolvers/zod";
import { useMutation } from "@tanstack/react-query";
import { useForm } from "react-hook-form";
import { z } from "zod";
import { CopyButton } from "../components/copy-button.tsx";
import { ErrorNote } from "../components/error-note.tsx";
import { useForgeEvents, useMakeForgeEventsSecret } from "../data/forge-events.ts";
import { Field } from "../forms/field.tsx";
import { type FieldAliases, showServerProblems } from "../forms/server-problems.ts";
import { formatAgo } from "../lib/format.ts";

const outcomeWords: Record<ForgeEventDelivery["outcome"], string> = {
  started: "started a turn",
  followed_up: "followed up",
  ignored: "ignored",
  refused: "refused",
};

/** The protocol's settings, with the assignee typed as text: blank means none. */
const eventsSchema = forgeEventsSettingsSchema.extend({
  assignee: z
    .string()
    .transform((text) => text.trim() || null)
    .pipe(forgeEventsSettingsSchema.shape.assignee.unwrap()),
});
type EventsFields = z.input<typeof eventsSchema>;

/** Where the server's problems with `forge.events.*` land in the form. */
const eventsAliases: FieldAliases<EventsFields> = Object.fromEntries(
  (Object.keys(eventsSchema.shape) as Array<keyof EventsFields>).map((field) => [
    `forge.events.${field}`,
    field,
  ]),
);

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
  const form = useForm<EventsFields, unknown, z.output<typeof eventsSchema>>({
    resolver: zodResolver(eventsSchema),
    defaultValues: {
      enabled: events?.enabled ?? false,
      trigger: events?.trigger ?? "@gadget",
      label: events?.label ?? "gadget",
      assignee: events?.assignee ?? "",
      reviewFollowUps: events?.reviewFollowUps ?? true,
      checkFollowUps: events?.checkFollowUps ?? false,
    },
  });
  const { register } = form;
  const errors = form.formState.errors;
  const save = useMutation({
    mutationFn: onSave,
    onError: (error) => showServerProblems(form, error, eventsAliases),
  });
  // The secret is shown from the answer, once: "I have copied them" forgets it.
  const makeSecret = useMutation({ mutationFn: onMakeSecret });
  if (!forge) return null;
  const secret = makeSecret.data;

  return (
    <section className="card form-grid" aria-label="Forge events">
      <form
        className="form-grid"
        aria-label="Forge events settings"
        onSubmit={form.handleSubmit((settings) =>
          save.mutate({ forge: { kind: forge.kind, apiUrl: forge.apiUrl, events: settings } }),
        )}
      >
        <h3>Work that starts on the forge</h3>
        <label>
          <input type="checkbox" {...register("enabled")} /> Issues and comments on the forge start
          turns (only from people with write access)
        </label>
        <Field label="Trigger word in a comment" error={errors.trigger}>
          <input {...register("trigger")} />
        </Field>
        <Field label="Label that starts an issue's turn" error={errors.label}>
          <input {...register("label")} />
        </Field>
        <Field label="Assignee that starts an issue's turn (optional)" error={errors.assignee}>
          <input {...register("assignee")} />
        </Field>
        <label>
          <input type="checkbox" {...register("reviewFollowUps")} /> Review comments with the
          trigger follow up on the session's pull request
        </label>
        <label>
          <input type="checkbox" {...register("checkFollowUps")} /> A check that fails on the
          session's pull request follows up (two in a row at most)
        </label>
        <ErrorNote error={save.error} title="Could not save forge events" />
        <ErrorNote error={makeSecret.error} title="Could not make the webhook secret" />
        <div className="form-actions">
          <button type="submit" className="button small" disabled={save.isPending}>
            Save forge events
          </button>
          <button
            type="button"
            className="button small ghost"
            disabled={makeSecret.isPending}
            onClick={() => makeSecret.mutate()}
          >
            {forge.hasEventsSecret ? "Make a new webhook secret" : "Make the webhook secret"}
          </button>
        </div>
      </form>
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
          <button type="button" className="button small ghost" onClick={() => makeSecret.reset()}>
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
