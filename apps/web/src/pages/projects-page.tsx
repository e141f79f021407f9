// Projects: the user's projects and a form to add one from a git URL.
import type { CreateProjectBody, GitUrlCheck, Project } from "@gadget/protocol";
import { type FormEvent, useState } from "react";
import { Link } from "wouter";
import { useApi } from "../app/auth.tsx";
import { useLoader } from "../app/use-loader.ts";
import { ErrorNote } from "../components/error-note.tsx";
import { formatAgo } from "../lib/format.ts";

export function ProjectForm({
  onCreate,
}: {
  /** Creates it; resolves with what the drone's check of its URL found, if the server says. */
  onCreate: (body: CreateProjectBody) => Promise<GitUrlCheck | undefined>;
}) {
  const [check, setCheck] = useState<GitUrlCheck | null>(null);
  const [name, setName] = useState("");
  const [gitUrl, setGitUrl] = useState("");
  const [defaultBranch, setDefaultBranch] = useState("");
  const [verify, setVerify] = useState("");
  const [saving, setSaving] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setSaving(true);
    setError(null);
    setCheck(null);
    const verifyCommands = verify
      .split("\n")
      .map((line) => line.trim())
      .filter(Boolean);
    try {
      const checked = await onCreate({
        name: name.trim(),
        gitUrl: gitUrl.trim(),
        ...(defaultBranch.trim() ? { defaultBranch: defaultBranch.trim() } : {}),
        ...(verifyCommands.length > 0 ? { verifyCommands } : {}),
      });
      setName("");
      setGitUrl("");
      setDefaultBranch("");
      setVerify("");
      setCheck(checked ?? null);
    } catch (caught) {
      setError(caught);
    } finally {
      setSaving(false);
    }
  };
  return (
    <form className="card form-grid" onSubmit={submit} aria-label="Add a project">
      <h2>Add a project</h2>
      <label className="field">
        <span>Name</span>
        <input required value={name} onChange={(event) => setName(event.target.value)} />
      </label>
      <label className="field">
        <span>Git URL</span>
        <input
          required
          value={gitUrl}
          onChange={(event) => setGitUrl(event.target.value)}
          placeholder="https://github.com/you/app.git or /path/to/repo"
        />
      </label>
      <label className="field">
        <span>Default branch (optional)</span>
        <input
          value={defaultBranch}
          onChange={(event) => setDefaultBranch(event.target.value)}
          placeholder="main"
        />
      </label>
      <label className="field">
        <span>Verify commands (optional, one a line)</span>
        <textarea
          rows={2}
          value={verify}
          onChange={(event) => setVerify(event.target.value)}
          placeholder="npm test"
        />
      </label>
      <ErrorNote error={error} title="Could not add the project" />
      {check ? (
        <p className={check.checked ? "ok-note" : "note"} role="status">
          {check.message}
        </p>
      ) : null}
      <div className="form-actions">
        <button type="submit" className="button primary" disabled={saving}>
          {saving ? "Adding…" : "Add project"}
        </button>
      </div>
    </form>
  );
}

export function ProjectList({ projects }: { projects: Project[] }) {
  if (projects.length === 0) {
    return <p className="empty">No projects yet. Add one from a git URL below.</p>;
  }
  return (
    <ul className="card-list">
      {projects.map((project) => (
        <li key={project._id}>
          <Link href={`/projects/${project._id}`} className="card card-link">
            <strong>{project.name}</strong>
            <span className="muted small">{project.gitUrl}</span>
            <span className="muted small">
              added {formatAgo(project.createdAt as unknown as string)}
            </span>
          </Link>
        </li>
      ))}
    </ul>
  );
}

export function ProjectsPage() {
  const api = useApi();
  const projects = useLoader(() => api.listProjects().then((answer) => answer.projects), [api]);
  return (
    <div className="page">
      <div className="page-head">
        <h1>Projects</h1>
      </div>
      {projects.error ? (
        <ErrorNote
          error={projects.error}
          title="Could not load projects"
          onRetry={projects.reload}
        />
      ) : projects.data ? (
        <ProjectList projects={projects.data} />
      ) : (
        <p className="muted">Loading projects…</p>
      )}
      <ProjectForm
        onCreate={async (body) => {
          const { project, gitUrlCheck } = await api.createProject(body);
          projects.setData((current) => [...(current ?? []), project]);
          return gitUrlCheck;
        }}
      />
    </div>
  );
}
