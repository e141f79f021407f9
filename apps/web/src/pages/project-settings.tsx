// A project's settings that shape its turns: what the drone's sandbox lets commands reach, the
// commands that verify the agent's work, how the drone names each session's branch, and whether it
// pushes that branch (delivery) under which commit author, and the forge its pull requests are
// opened on (the token is write-only: set, replaced or removed, never shown), and the MCP servers
// whose tools the agent gets.
import {
  DEFAULT_FORGE_API_URLS,
  type DeliveryMode,
  type ForgeKind,
  type NetworkMode,
  type Project,
  type UpdateProjectBody,
} from "@gadget/protocol";
import { zodResolver } from "@hookform/resolvers/zod";
import { useMutation } from "@tanstack/react-query";
import { useState } from "react";
import { Controller, useForm } from "react-hook-form";
import { EnvEditor } from "../components/env-editor.tsx";
import { ErrorNote } from "../components/error-note.tsx";
import { Field } from "../forms/field.tsx";
import { showServerProblems } from "../forms/server-problems.ts";
import { McpServersEditor } from "./mcp-servers-editor.tsx";
import {
  changesOf,
  fieldsAfterSave,
  fieldsOf,
  type SettingsFields,
  type SettingsValues,
  settingsAliases,
  settingsSchema,
} from "./project-settings-form.ts";

export const networkWords: Record<NetworkMode, string> = {
  none: "No network (default)",
  allowlist: "Only the hosts listed below",
  open: "Open: any host, including this machine's own services",
};

export const deliveryWords: Record<DeliveryMode, string> = {
  workspace: "Keep the branch on the drone (default)",
  branch: "Push the session's branch to origin after every turn",
  "pull-request": "Push the branch and open the session's pull request on the forge",
};

export const forgeWords: Record<ForgeKind | "none", string> = {
  none: "None",
  github: "GitHub",
  gitlab: "GitLab (merge requests)",
  gitea: "Gitea or Forgejo",
};

/** Network policy, verification commands and branch prefix of one project, saved with `PATCH /api/projects/:id`. */
export function ProjectSettings({
  project,
  onSave,
}: {
  project: Project;
  onSave: (body: UpdateProjectBody) => Promise<unknown>;
}) {
  const form = useForm<SettingsFields, unknown, SettingsValues>({
    resolver: zodResolver(settingsSchema),
    defaultValues: fieldsOf(project),
  });
  const { register, formState, watch, setValue } = form;
  const errors = formState.errors;
  // The MCP servers go in the body only when edited (their secrets are write-only).
  const serversEdited = Boolean(formState.dirtyFields.mcpServers);
  // A stored token is never shown: the field appears only to replace it.
  const [replacingToken, setReplacingToken] = useState(!project.forge?.hasToken);
  const save = useMutation({
    mutationFn: (values: SettingsValues) => onSave(changesOf(project, values, serversEdited)),
    onSuccess: (_answer, values) => {
      form.reset(fieldsAfterSave(form.getValues()));
      // A token just saved is never shown again.
      if (values.forgeKind !== "none" && values.forgeToken.trim()) setReplacingToken(false);
    },
    onError: (error) => showServerProblems(form, error, settingsAliases),
  });
  const network = watch("network");
  const forgeKind = watch("forgeKind");
  return (
    <form
      className="form-grid"
      onSubmit={form.handleSubmit((values) => save.mutate(values))}
      aria-label="Project settings"
    >
      <Field label="Network for the agent's commands" error={errors.network}>
        <select {...register("network")}>
          {(Object.keys(networkWords) as NetworkMode[]).map((mode) => (
            <option key={mode} value={mode}>
              {networkWords[mode]}
            </option>
          ))}
        </select>
      </Field>
      {network === "allowlist" ? (
        <Field
          label="Allowed hosts, one per line (e.g. registry.npmjs.org, *.github.com, 127.0.0.1:4873). An empty list allows none."
          error={errors.hosts}
        >
          <textarea rows={4} {...register("hosts")} aria-label="Allowed hosts" />
        </Field>
      ) : null}
      <Field
        label="Verification commands, one per line (run after each turn that changed files)"
        error={errors.verify}
      >
        <textarea rows={2} {...register("verify")} aria-label="Verification commands" />
      </Field>
      <Field
        label="Drone labels the project's turns require, separated by spaces (e.g. gpu os=linux): a turn waits for an online drone that has them all. Empty: any drone."
        error={errors.requires}
      >
        <input {...register("requires")} aria-label="Required drone labels" />
      </Field>
      <Field
        label="Branch prefix: each session works on its own branch, named this prefix, the session's name and the start of its id (e.g. gadget/fix-login-665f1c). New sessions use it."
        error={errors.branchPrefix}
      >
        <input {...register("branchPrefix")} aria-label="Branch prefix" />
      </Field>
      <Field
        label="Delivery: what happens to a session's branch. Pushing uses the drone machine's own git credentials."
        error={errors.delivery}
      >
        <select {...register("delivery")} aria-label="Delivery">
          {(Object.keys(deliveryWords) as DeliveryMode[]).map((mode) => (
            <option key={mode} value={mode}>
              {deliveryWords[mode]}
            </option>
          ))}
        </select>
      </Field>
      <Field
        label="Commit author name (empty: the drone machine's git identity)"
        error={errors.authorName}
      >
        <input {...register("authorName")} aria-label="Commit author name" />
      </Field>
      <Field label="Commit author email" error={errors.authorEmail}>
        <input {...register("authorEmail")} aria-label="Commit author email" />
      </Field>
      <Field label="Forge for pull requests: the drone opens each session's pull request through its API">
        <select
          {...register("forgeKind", {
            onChange: (event: { target: { value: ForgeKind | "none" } }) => {
              const kind = event.target.value;
              // A new kind starts from its public service's API; a self-hosted one is typed over it.
              if (kind !== "none" && kind !== forgeKind) {
                setValue("forgeUrl", DEFAULT_FORGE_API_URLS[kind], { shouldDirty: true });
              }
              if (kind !== "none" && !project.forge?.hasToken) setReplacingToken(true);
            },
          })}
          aria-label="Forge"
        >
          {(Object.keys(forgeWords) as Array<ForgeKind | "none">).map((kind) => (
            <option key={kind} value={kind}>
              {forgeWords[kind]}
            </option>
          ))}
        </select>
      </Field>
      {forgeKind === "none" ? (
        project.forge ? (
          <p className="muted small">The forge and its token are removed when you save.</p>
        ) : null
      ) : (
        <>
          <Field
            label="Forge API URL (e.g. https://api.github.com, https://gitlab.com/api/v4, https://gitea.example.org/api/v1)"
            error={errors.forgeUrl}
          >
            <input {...register("forgeUrl")} aria-label="Forge API URL" />
          </Field>
          {replacingToken ? (
            <Field
              label="Forge token (may open pull requests; stored encrypted, never shown again)"
              error={errors.forgeToken}
            >
              <input
                type="password"
                autoComplete="off"
                {...register("forgeToken")}
                aria-label="Forge token"
              />
            </Field>
          ) : (
            <div className="field">
              <span className="muted small" role="status" aria-label="Forge token">
                Token set
              </span>
              <div className="form-actions">
                <button
                  type="button"
                  className="button small"
                  onClick={() => setReplacingToken(true)}
                >
                  Replace token
                </button>
                <button
                  type="button"
                  className="button small"
                  onClick={() => setValue("forgeKind", "none", { shouldDirty: true })}
                >
                  Remove forge
                </button>
              </div>
            </div>
          )}
        </>
      )}
      <Field
        label="Environment variables every command of the project gets (nothing else of the drone's environment passes but PATH, HOME, the locale and the time zone)"
        error={errors.envText}
      >
        <Controller
          control={form.control}
          name="envKept"
          render={({ field: kept }) => (
            <Controller
              control={form.control}
              name="envText"
              render={({ field: text }) => (
                <EnvEditor
                  kept={kept.value}
                  text={text.value}
                  placeholder="NODE_ENV=test (one KEY=VALUE per line; stored encrypted, never shown again)"
                  label="Project environment"
                  onKept={kept.onChange}
                  onText={text.onChange}
                />
              )}
            />
          )}
        />
      </Field>
      <Controller
        control={form.control}
        name="mcpServers"
        render={({ field, fieldState }) => (
          <>
            <McpServersEditor drafts={field.value} network={network} onChange={field.onChange} />
            {fieldState.error?.message ? (
              <small className="field-problem">{fieldState.error.message}</small>
            ) : null}
          </>
        )}
      />
      <ErrorNote error={save.error} title="Could not save the settings" />
      <div className="form-actions">
        {save.isSuccess && !formState.isDirty ? (
          <span className="muted small">Saved; the next turn uses them.</span>
        ) : null}
        <button type="submit" className="button primary small" disabled={save.isPending}>
          {save.isPending ? "Saving…" : "Save settings"}
        </button>
      </div>
    </form>
  );
}
