// Opens, edits and saves one file over the file relay; a stale save (409) shows the conflict and
// lets the user choose between the drone's copy and their own.
import type { FileContent } from "@gadget/protocol";
import { lazy, Suspense, useCallback, useEffect, useState } from "react";
import { ApiError } from "../api/api-error.ts";
import { isDarkTheme } from "../app/theme.ts";
import { ErrorNote } from "../components/error-note.tsx";

const CodeEditor = lazy(() => import("./code-editor.tsx"));

export interface FileEditorProps {
  path: string;
  read: (path: string) => Promise<FileContent>;
  /** Absent: the file is shown read-only (the project's default-branch checkout). */
  write?: (body: { path: string; content: string; baseSha?: string }) => Promise<{ sha: string }>;
  onSaved?: (path: string) => void;
}

interface Loaded {
  content: string;
  sha: string;
}

export function FileEditor({ path, read, write, onSaved }: FileEditorProps) {
  const [file, setFile] = useState<Loaded | null>(null);
  const [draft, setDraft] = useState("");
  const [loadError, setLoadError] = useState<unknown>(null);
  const [saveError, setSaveError] = useState<unknown>(null);
  const [conflict, setConflict] = useState(false);
  const [saving, setSaving] = useState(false);
  const [savedAt, setSavedAt] = useState<number | null>(null);
  const dirty = file !== null && draft !== file.content;

  const load = useCallback(async () => {
    setLoadError(null);
    setConflict(false);
    try {
      const answer = await read(path);
      setFile({ content: answer.content, sha: answer.sha });
      setDraft(answer.content);
    } catch (error) {
      setLoadError(error);
    }
  }, [path, read]);

  useEffect(() => {
    setFile(null);
    setSavedAt(null);
    setSaveError(null);
    void load();
  }, [load]);

  const save = useCallback(
    async (baseSha: string | undefined) => {
      if (!file) return;
      setSaving(true);
      setSaveError(null);
      try {
        if (!write) return;
        const { sha } = await write({ path, content: draft, ...(baseSha ? { baseSha } : {}) });
        setFile({ content: draft, sha });
        setConflict(false);
        setSavedAt(Date.now());
        onSaved?.(path);
      } catch (error) {
        if (error instanceof ApiError && error.status === 409) setConflict(true);
        else setSaveError(error);
      } finally {
        setSaving(false);
      }
    },
    [draft, file, onSaved, path, write],
  );

  const overwrite = async () => {
    // Save over the drone's current copy: read its sha so the write is still a checked one.
    try {
      const current = await read(path);
      await save(current.sha);
    } catch (error) {
      setSaveError(error);
    }
  };

  if (loadError)
    return <ErrorNote error={loadError} title={`Could not open ${path}`} onRetry={load} />;
  if (!file) return <p className="muted">Opening {path}…</p>;

  return (
    <div className="file-editor">
      <div className="file-editor-bar">
        <code>{path}</code>
        {dirty ? <span className="pill pill-busy">unsaved</span> : null}
        {!dirty && savedAt ? <span className="muted small">saved</span> : null}
        <span className="spacer" />
        <button type="button" className="button small ghost" onClick={load} disabled={saving}>
          Reload
        </button>
        {write ? (
          <button
            type="button"
            className="button small primary"
            onClick={() => save(file.sha)}
            disabled={!dirty || saving || conflict}
          >
            {saving ? "Saving…" : "Save"}
          </button>
        ) : (
          <span className="pill">read-only</span>
        )}
      </div>
      {conflict ? (
        <div className="conflict" role="alert">
          <strong>Conflict:</strong> the drone's copy of <code>{path}</code> changed since you
          opened it (the agent or someone else wrote it). Your edits are still here.
          <div className="conflict-actions">
            <button type="button" className="button small" onClick={load}>
              Load the drone's version (drop my edits)
            </button>
            <button type="button" className="button small danger" onClick={overwrite}>
              Overwrite with mine
            </button>
          </div>
        </div>
      ) : null}
      <ErrorNote error={saveError} title="Not saved" />
      <Suspense fallback={<p className="muted">Loading the editor…</p>}>
        <CodeEditor
          path={path}
          value={draft}
          onChange={setDraft}
          readOnly={!write}
          onSave={() => {
            if (write && dirty && !conflict) void save(file.sha);
          }}
          dark={isDarkTheme()}
        />
      </Suspense>
    </div>
  );
}
