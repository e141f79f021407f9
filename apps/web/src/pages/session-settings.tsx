// A session's settings, under its header: rename it, change its mode and approval, see and remove
// the commands it always allows, and delete it with its turns (asked first).
import {
  type ChatSession,
  type UpdateSessionBody,
  updateSessionBodySchema,
} from "@gadget/protocol";
import { zodResolver } from "@hookform/resolvers/zod";
import { useMutation } from "@tanstack/react-query";
import { useForm } from "react-hook-form";
import { z } from "zod";
import { ConfirmButton } from "../components/confirm-button.tsx";
import { ErrorNote } from "../components/error-note.tsx";
import { Field } from "../forms/field.tsx";
import { showServerProblems } from "../forms/server-problems.ts";
import { modeChoices, modeHint } from "../lib/modes.ts";

export interface SessionSettingsProps {
  session: Pick<ChatSession, "_id" | "name" | "mode" | "approval" | "allowedCommands"> &
    Partial<Pick<ChatSession, "autoResume">>;
  onSave: (body: UpdateSessionBody) => Promise<unknown>;
  onDelete: () => Promise<unknown>;
}

const shape = updateSessionBodySchema.shape;
const settingsSchema = z.object({
  name: shape.name.unwrap(),
  mode: shape.mode.unwrap().unwrap(),
  approval: shape.approval.unwrap().unwrap(),
  autoResume: shape.autoResume.unwrap().unwrap(),
});
type SettingsFields = z.input<typeof settingsSchema>;

export function SessionSettings({ session, onSave, onDelete }: SessionSettingsProps) {
  const form = useForm<SettingsFields, unknown, z.output<typeof settingsSchema>>({
    resolver: zodResolver(settingsSchema),
    defaultValues: {
      name: session.name,
      mode: session.mode,
      approval: session.approval,
      autoResume: session.autoResume ?? "same-drone",
    },
  });
  const errors = form.formState.errors;
  const save = useMutation({
    mutationFn: onSave,
    onError: (error) => showServerProblems(form, error),
  });
  const allowed = session.allowedCommands ?? [];

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
      <form
        className="form-grid"
        onSubmit={form.handleSubmit((values) => {
          // Only what changed is sent.
          const body: UpdateSessionBody = {};
          if (values.name !== session.name) body.name = values.name;
          if (values.mode !== session.mode) body.mode = values.mode;
          if (values.approval !== session.approval) body.approval = values.approval;
          if (values.autoResume !== (session.autoResume ?? "same-drone"))
            body.autoResume = values.autoResume;
          save.mutate(body);
        })}
        aria-label="Session settings"
      >
        <Field label="Name" error={errors.name}>
          <input required {...form.register("name")} />
        </Field>
        <div className="field-row">
          <Field label="Mode" error={errors.mode}>
            <select {...form.register("mode")}>
              {modeChoices.map((choice) => (
                <option key={choice.value} value={choice.value}>
                  {choice.label}
                </option>
              ))}
            </select>
          </Field>
          <Field label="Approval" error={errors.approval}>
            <select {...form.register("approval")}>
              <option value="on-write">ask before writes</option>
              <option value="auto">automatic</option>
            </select>
          </Field>
          <Field label="If its drone goes away" error={errors.autoResume}>
            <select {...form.register("autoResume")}>
              <option value="same-drone">go on when the drone restarts</option>
              <option value="any-drone">go on on another drone too</option>
              <option value="off">stop; I resume it myself</option>
            </select>
          </Field>
        </div>
        <p className="muted small mode-hint">
          {form.watch("mode")}: {modeHint(form.watch("mode"))}
        </p>
        <div className="form-actions">
          <button type="submit" className="button primary small" disabled={save.isPending}>
            {save.isPending ? "Saving…" : "Save"}
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
                disabled={save.isPending}
                aria-label={`Stop allowing ${command}`}
                onClick={() =>
                  save.mutate({ allowedCommands: allowed.filter((item) => item !== command) })
                }
              >
                Remove
              </button>
            </li>
          ))}
        </ul>
      )}
      <ErrorNote error={save.error} title="Could not save the session" />
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
