// One project: its file tree and editor over the file relay, and its chat sessions.
import type { ChatSession, CreateSessionBody, TurnMode } from "@gadget/protocol";
import { type FormEvent, useCallback, useState } from "react";
import { Link, useLocation } from "wouter";
import { useApi } from "../app/auth.tsx";
import { useLoader } from "../app/use-loader.ts";
import { ErrorNote } from "../components/error-note.tsx";
import { FileEditor } from "../editor/file-editor.tsx";
import { FileTree } from "../editor/file-tree.tsx";
import { formatAgo } from "../lib/format.ts";
import { CloneNowButton, ProjectManage } from "./project-manage.tsx";
import { networkWords, ProjectSettings } from "./project-settings.tsx";

export const modeWords: Record<TurnMode, string> = {
  agent: "agent: reads and writes",
  ask: "ask: reads only",
  tester: "tester",
  docser: "docs writer",
};

export function SessionForm({
  onCreate,
}: {
  onCreate: (body: CreateSessionBody) => Promise<void>;
}) {
  const [name, setName] = useState("");
  const [mode, setMode] = useState<TurnMode>("agent");
  const [approval, setApproval] = useState<"auto" | "on-write">("on-write");
  const [saving, setSaving] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setSaving(true);
    setError(null);
    try {
      await onCreate({ name: name.trim() || "New session", mode, approval });
      setName("");
    } catch (caught) {
      setError(caught);
    } finally {
      setSaving(false);
    }
  };
  return (
    <form className="session-form" onSubmit={submit} aria-label="New session">
      <input
        value={name}
        onChange={(event) => setName(event.target.value)}
        placeholder="Session name, e.g. Fix the login bug"
        aria-label="Session name"
      />
      <div className="field-row">
        <label>
          Mode{" "}
          <select value={mode} onChange={(event) => setMode(event.target.value as TurnMode)}>
            <option value="agent">agent</option>
            <option value="ask">ask</option>
            <option value="tester">tester</option>
            <option value="docser">docser</option>
          </select>
        </label>
        <label>
          Approval{" "}
          <select
            value={approval}
            onChange={(event) => setApproval(event.target.value as "auto" | "on-write")}
          >
            <option value="on-write">ask before writes</option>
            <option value="auto">automatic</option>
          </select>
        </label>
        <button type="submit" className="button primary small" disabled={saving}>
          {saving ? "Creating…" : "New session"}
        </button>
      </div>
      <ErrorNote error={error} title="Could not create the session" />
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
  const api = useApi();
  const project = useLoader(
    () =>
      api.listProjects().then((answer) => {
        const found = answer.projects.find((item) => item._id === projectId);
        if (!found) throw new Error("This project does not exist, or it is not yours.");
        return found;
      }),
    [api, projectId],
  );
  const sessions = useLoader(
    () => api.listSessions(projectId).then((answer) => answer.sessions),
    [api, projectId],
  );
  const [, navigate] = useLocation();
  const [openPath, setOpenPath] = useState<string | null>(null);
  const [refreshKey, setRefreshKey] = useState(0);
  // Whose files: "" is the default branch's checkout (read-only), else a session's worktree.
  const [filesOf, setFilesOf] = useState("");
  const sessionId = filesOf || undefined;
  const list = useCallback(
    (path: string) => api.listFiles(projectId, path, sessionId),
    [api, projectId, sessionId],
  );
  const read = useCallback(
    (path: string) => api.readFile(projectId, path, sessionId),
    [api, projectId, sessionId],
  );
  const write = useCallback(
    (body: { path: string; content: string; baseSha?: string }) =>
      api.writeFile(projectId, { ...body, ...(sessionId ? { sessionId } : {}) }),
    [api, projectId, sessionId],
  );

  return (
    <div className="page page-wide">
      <div className="page-head">
        <Link href="/projects" className="muted">
          Projects
        </Link>
        <span className="muted">/</span>
        <h1>{project.data?.name ?? (project.error ? "Project" : "…")}</h1>
        {project.data ? <span className="muted small">{project.data.gitUrl}</span> : null}
      </div>
      <ErrorNote
        error={project.error}
        title="Could not load the project"
        onRetry={project.reload}
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
            onRename={async (name) => {
              const { project: saved } = await api.updateProject(projectId, { name });
              project.setData(() => saved);
            }}
            onDelete={async () => {
              await api.deleteProject(projectId);
              navigate("/projects");
            }}
          />
          <ProjectSettings
            project={project.data}
            onSave={async (body) => {
              const { project: saved } = await api.updateProject(projectId, body);
              project.setData(() => saved);
            }}
          />
        </details>
      ) : null}
      <div className="project-grid">
        <aside className="panel">
          <div className="panel-head">
            <h2>Files</h2>
            <span className="spacer" />
            <CloneNowButton
              onClone={() => api.cloneProject(projectId)}
              onCloned={() => setRefreshKey((key) => key + 1)}
            />
            <button
              type="button"
              className="button small ghost"
              onClick={() => setRefreshKey((key) => key + 1)}
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
          <FileTree
            key={filesOf}
            list={list}
            selected={openPath}
            onOpen={setOpenPath}
            refreshKey={refreshKey}
          />
        </aside>
        <section className={openPath ? "panel editor-panel" : "panel editor-panel editor-idle"}>
          {openPath ? (
            <FileEditor
              key={`${filesOf}:${openPath}`}
              path={openPath}
              read={read}
              {...(sessionId ? { write } : {})}
            />
          ) : (
            <p className="empty">
              Pick a file on the left. The default branch is read-only; choose a session to edit its
              worktree (its next turn, or Deliver now, commits your edits).
            </p>
          )}
        </section>
        <aside className="panel sessions-panel">
          <div className="panel-head">
            <h2>Sessions</h2>
          </div>
          <SessionForm
            onCreate={async (body) => {
              const { session } = await api.createSession(projectId, body);
              sessions.setData((current) => [...(current ?? []), session]);
            }}
          />
          {sessions.error ? (
            <ErrorNote
              error={sessions.error}
              title="Could not load sessions"
              onRetry={sessions.reload}
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
