// What a user can do to a turn besides stopping it: a queued turn's place with Edit and Remove,
// a finished turn's Rewind to here and Fork from here, and the messages the turn took while it
// ran (steering).
import { type ChatTurn, editTurnBodySchema, type TurnEventData } from "@gadget/protocol";
import { zodResolver } from "@hookform/resolvers/zod";
import { useMutation } from "@tanstack/react-query";
import { useState } from "react";
import { useForm } from "react-hook-form";
import type { z } from "zod";
import { ErrorNote } from "../components/error-note.tsx";
import { Field } from "../forms/field.tsx";
import { showServerProblems } from "../forms/server-problems.ts";

/** A prompt as the server takes it (trimmed, not empty): a queued turn's edit or a resent prompt. */
type PromptFields = z.input<typeof editTurnBodySchema>;
type PromptValues = z.output<typeof editTurnBodySchema>;

/** A one-field form of `prompt`, checked with the protocol's schema before anything is sent. */
function usePromptForm(prompt: string) {
  return useForm<PromptFields, unknown, PromptValues>({
    resolver: zodResolver(editTurnBodySchema),
    defaultValues: { prompt },
  });
}

/**
 * A queued turn waiting for the session's earlier turns: its place, its prompt editable. `position`
 * is its place as the page counts it (the live updates of a turn do not carry it); without one, the
 * place the turn was read with.
 */
export function QueuedControls({
  turn,
  position,
  edit,
  remove,
}: {
  turn: ChatTurn;
  position?: number | undefined;
  edit: (prompt: string) => Promise<void>;
  remove: () => Promise<void>;
}) {
  const [editing, setEditing] = useState(false);
  const form = usePromptForm(turn.prompt);
  const save = useMutation({
    mutationFn: ({ prompt }: PromptValues) => edit(prompt),
    onSuccess: () => setEditing(false),
    onError: (error) => showServerProblems(form, error),
  });
  const withdraw = useMutation({ mutationFn: remove });
  const place =
    position ?? (turn.waiting && "position" in turn.waiting ? turn.waiting.position : 0);
  if (!place) return null;
  return (
    <div className="queued-controls">
      <span className="muted">
        Queued · position {place} — starts when the turns before it have finished
      </span>
      {editing ? (
        <form onSubmit={form.handleSubmit((values) => save.mutate(values))}>
          <Field label="Queued prompt" error={form.formState.errors.prompt}>
            <textarea rows={2} {...form.register("prompt")} />
          </Field>
          <button type="submit" className="button small primary" disabled={save.isPending}>
            Save
          </button>
          <button
            type="button"
            className="button small"
            onClick={() => {
              form.reset();
              setEditing(false);
            }}
          >
            Keep as it was
          </button>
        </form>
      ) : (
        <>
          <button type="button" className="button small" onClick={() => setEditing(true)}>
            Edit
          </button>
          <button
            type="button"
            className="button small danger"
            disabled={withdraw.isPending}
            onClick={() => withdraw.mutate()}
          >
            Remove
          </button>
        </>
      )}
      <ErrorNote error={save.error ?? withdraw.error} title="That did not work" />
    </div>
  );
}

/**
 * A finished turn's Rewind to here (code and conversation) and Fork from here; on the session's
 * last turn, Edit and resend (rewind, then the edited prompt as a new turn).
 */
export function HistoryControls({
  prompt,
  rewind,
  fork,
  resend,
}: {
  prompt: string;
  rewind: () => Promise<void>;
  fork: () => Promise<void>;
  resend?: ((prompt: string) => Promise<void>) | undefined;
}) {
  const back = useMutation({ mutationFn: rewind });
  const branch = useMutation({ mutationFn: fork });
  const [editing, setEditing] = useState(false);
  const form = usePromptForm(prompt);
  const again = useMutation({
    mutationFn: (values: PromptValues) => (resend ? resend(values.prompt) : Promise.resolve()),
    onSuccess: () => setEditing(false),
    onError: (error) => showServerProblems(form, error),
  });
  if (editing) {
    return (
      <form
        className="history-controls"
        onSubmit={form.handleSubmit((values) => again.mutate(values))}
      >
        <Field label="Prompt to send again" error={form.formState.errors.prompt}>
          <textarea rows={2} {...form.register("prompt")} />
        </Field>
        <button type="submit" className="button small primary" disabled={again.isPending}>
          {again.isPending ? "Sending…" : "Rewind and send"}
        </button>
        <button
          type="button"
          className="button small"
          onClick={() => {
            form.reset();
            setEditing(false);
          }}
        >
          Keep as it was
        </button>
        <ErrorNote error={again.error} title="That did not work" />
      </form>
    );
  }
  return (
    <div className="history-controls">
      {resend ? (
        <button type="button" className="button small" onClick={() => setEditing(true)}>
          Edit and resend
        </button>
      ) : null}
      <button
        type="button"
        className="button small"
        disabled={back.isPending}
        title="Take back this turn and the ones after it: files and conversation (kept in git)"
        onClick={() => back.mutate()}
      >
        {back.isPending ? "Rewinding…" : "Rewind to here"}
      </button>
      <button
        type="button"
        className="button small"
        disabled={branch.isPending}
        title="A new session with the conversation up to this turn, its branch at this turn's commit"
        onClick={() => branch.mutate()}
      >
        {branch.isPending ? "Forking…" : "Fork from here"}
      </button>
      <ErrorNote error={back.error ?? branch.error} title="That did not work" />
    </div>
  );
}

/** The user's messages the turn took while it ran. */
export function SteeringMessages({ messages }: { messages: TurnEventData<"user_message">[] }) {
  if (messages.length === 0) return null;
  return (
    <ul className="steering-messages" aria-label="Your messages to this turn">
      {messages.map((message) => (
        <li key={message.messageId} className="prompt-bubble steering">
          {message.text}
        </li>
      ))}
    </ul>
  );
}

/** The `/command` the prompt called: where it came from, and the prompt the model got instead. */
export function CommandExpansion({ command }: { command: TurnEventData<"command"> | null }) {
  if (!command) return null;
  const origin =
    command.source === "file" ? command.origin : `a prompt of MCP server ${command.origin}`;
  return (
    <details className="command-expansion">
      <summary>
        <code>/{command.name}</code> expanded from {origin}
      </summary>
      <pre>{command.prompt}</pre>
    </details>
  );
}
