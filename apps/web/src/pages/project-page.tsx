// One project: its file tree and editor over the file relay, and its chat sessions.
import {
  type ChatSession,
  type CreateSessionBody,
  createSessionBodySchema,
} from "@gadget/protocol";
import { zodResolver } from "@hookform/resolvers/zod";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useId, useState } from "react";
import { useForm } from "react-hook-form";
import { Link, useLocation } from "wouter";
import { z } from "zod";
import { ErrorNote } from "../components/error-note.tsx";
import { keys } from "../data/keys.ts";
import {
  useCreateSession,
  useDeleteProject,
  useProject,
  useSessions,
  useUpdateProject,
} from "../data/projects.ts";
import { FileEditor } from "../editor/file-editor.tsx";
import { FileTree } from "../editor/file-tree.tsx";
import { showServerProblems } from "../forms/server-problems.ts";
import { formatAgo } from "../lib/format.ts";
import { modeChoices, modeHint } from "../lib/modes.ts";
import { ProjectForgeEvents } from "./forge-events-panel.tsx";
import { CloneNowButton, ProjectDelete, ProjectManage } from "./project-manage.tsx";
import { networkWords, ProjectSettings } from "./project-settings.tsx";

const sessionShape = createSessionBodySchema.shape;
const sessionFieldsSchema = z.object({
  // No name: "New session".
  name: z
    .string()
    .transform((text) => text.trim() || "New session")
    .pipe(sessionShape.name),
  mode: sessionShape.mode.unwrap(),
  approval: sessionShape.approval.unwrap(),
});

export function SessionForm({
  onCreate,
}: {
  onCreate: (body: CreateSessionBody) => Promise<unknown>;
}) {
  const form = useForm<z.input<typeof sessionFieldsSchema>, unknown, CreateSessionBody>({
    resolver: zodResolver(sessionFieldsSchema),
    defaultValues: { name: "", mode: "agent", approval: "on-write" },
  });
  const create = useMutation({
    mutationFn: onCreate,
    onSuccess: () => form.resetField("name"),
    onError: (error) => showServerProblems(form, error),
  });
  const problem = form.formState.errors.name?.message;
  const modeHintId = useId();
  return (
    <form
      className="session-form"
      onSubmit={form.handleSubmit((body) => create.mutate(body))}
      aria-label="New session"
    >
      <input
        {...form.register("name")}
        placeholder="Session name, e.g. Fix the login bug"
        aria-label="Session name"
        aria-invalid={problem ? true : undefined}
      />
      {problem ? <small className="field-problem">{problem}</small> : null}
      <div className="field-row">
        <label>
          Mode{" "}
          <select {...form.register("mode")} aria-describedby={modeHintId}>
            {modeChoices.map((choice) => (
              <option key={choice.value} value={choice.value}>
                {choice.label}
              </option>
            ))}
          </select>
        </label>
        <label>
          Approval{" "}
          <select {...form.register("approval")}>
            <option value="on-write">ask before writes</option>
            <option value="auto">automatic</option>
          </select>
        </label>
        <button type="submit" className="button primary small" disabled={create.isPending}>
          {create.isPending ? "Creating…" : "New session"}
        </button>
      </div>
      <small className="muted" id={modeHintId}>
        {form.watch("mode")}: {modeHint(form.watch("mode") ?? "agent")}
      </small>
      <ErrorNote error={create.error} title="Could not create the session" />
    </form>
  );
}

export function SessionList({
  projectId,
  sessions,
}: {
  projectId: string;
  sessions: ChatSession[];
}) {
  if (sessions.length === 0) return <p className="muted small">No sessions yet.</p>;
  return (
    <ul className="session-list">
      {[...sessions].reverse().map((session) => (
        <li key={session._id}>
          <Link href={`/projects/${projectId}/sessions/${session._id}`} className="session-link">
            <strong>{session.name}</strong>
            <span className="session-meta">
              <span className="pill">{session.mode}</span>
              <span className="pill">
                {session.approval === "on-write" ? "approve writes" : "auto"}
              </span>
              <span className="muted small">
                {formatAgo(session.createdAt as unknown as string)}
              </span>
            </span>
          </Link>
        </li>
      ))}
    </ul>
  );
}

export function ProjectPage({ projectId }: { projectId: string }) {
  const client = useQueryClient();
  const project = useProject(projectId);
  const sessions = useSessions(projectId);
  const createSession = useCreateSession(projectId);
  const update = useUpdateProject(projectId);
  const remove = useDeleteProject(projectId);
  const [, navigate] = useLocation();
  const [openPath, setOpenPath] = useState<string | null>(null);
  // Whose files: "" is the default branch's checkout (read-only), else a session's worktree.
  const [filesOf, setFilesOf] = useState("");
  const of = { projectId, sessionId: filesOf };
  const missing =
    project.data === null ? new Error("This project does not exist, or it is not yours.") : null;
  const loadError = project.error ?? missing;

  return (
    <div className="page page-wide">
      <div className="page-head">
        <Link href="/projects" className="muted">
          Projects
        </Link>
        <span className="muted">/</span>
        <h1>{project.data?.name ?? (loadError ? "Project" : "…")}</h1>
        {project.data ? <span className="muted small">{project.data.gitUrl}</span> : null}
      </div>
      <ErrorNote
        error={loadError}
        title="Could not load the project"
        onRetry={() => void project.refetch()}
      />
      {project.data ? (
        <details className="panel project-settings">
          <summary>
            Settings{" "}
            <span className="muted small">network: {networkWords[project.data.network]}</span>
          </summary>
          <ProjectManage
            key={project.data.name}
            project={project.data}
            onRename={(name) => update.mutateAsync({ name })}
          />
          <ProjectSettings project={project.data} onSave={update.mutateAsync} />
          <ProjectForgeEvents project={project.data} onSave={update.mutateAsync} />
          <ProjectDelete
            project={project.data}
            onDelete={async () => {
              await remove.mutateAsync();
              navigate("/projects");
            }}
          />
        </details>
      ) : null}
      <div className="project-grid">
        <aside className="panel" aria-label="Files">
          <div className="panel-head">
            <h2>Files</h2>
            <span className="spacer" />
            <CloneNowButton projectId={projectId} />
            <button
              type="button"
              className="button small ghost"
              onClick={() =>
                void client.invalidateQueries({ queryKey: keys.directories(projectId, filesOf) })
              }
            >
              Refresh
            </button>
          </div>
          <label className="files-of">
            <span className="muted small">Files of</span>
            <select
              value={filesOf}
              onChange={(event) => {
                setFilesOf(event.target.value);
                setOpenPath(null);
              }}
            >
              <option value="">the default branch (read-only)</option>
              {(sessions.data ?? []).map((session) => (
                <option key={session._id} value={session._id}>
                  session {session.name}
                </option>
              ))}
            </select>
          </label>
          <FileTree key={filesOf} of={of} selected={openPath} onOpen={setOpenPath} />
        </aside>
        <section className={openPath ? "panel editor-panel" : "panel editor-panel editor-idle"}>
          {openPath ? (
            <FileEditor
              key={`${filesOf}:${openPath}`}
              of={of}
              path={openPath}
              writable={filesOf !== ""}
            />
          ) : (
            <p className="empty">
              Pick a file in the Files list. The default branch is read-only; choose a session to
              edit its worktree (its next turn, or Deliver now, commits your edits).
            </p>
          )}
        </section>
        <aside className="panel sessions-panel" aria-label="Sessions">
          <div className="panel-head">
            <h2>Sessions</h2>
          </div>
          <SessionForm
            onCreate={async (body) => {
              const session = await createSession.mutateAsync(body);
              navigate(`/projects/${projectId}/sessions/${session._id}`);
            }}
          />
          {sessions.error ? (
            <ErrorNote
              error={sessions.error}
              title="Could not load sessions"
              onRetry={() => void sessions.refetch()}
            />
          ) : sessions.data ? (
            <SessionList projectId={projectId} sessions={sessions.data} />
          ) : (
            <p className="muted small">Loading sessions…</p>
          )}
        </aside>
      </div>
    </div>
  );
}
