// Opens, edits and saves one file over the file relay; a stale save (409) shows the conflict and
// lets the user choose between the drone's copy and their own.
import type { FileContent } from "@gadget/protocol";
import { lazy, Suspense, useState } from "react";
import { ApiError } from "../api/api-error.ts";
import { isDarkTheme } from "../app/theme.ts";
import { ErrorNote } from "../components/error-note.tsx";
import { type FilesOf, useFile, useWriteFile } from "../data/projects.ts";

const CodeEditor = lazy(() => import("./code-editor.tsx"));

export interface FileEditorProps {
  of: FilesOf;
  path: string;
  /** False: the file is shown read-only (the project's default-branch checkout). */
  writable: boolean;
}

export function FileEditor({ of, path, writable }: FileEditorProps) {
  const file = useFile(of, path);
  const write = useWriteFile(of, path);
  // The copy the edits started from, and the edits.
  const [base, setBase] = useState<FileContent | null>(null);
  const [draft, setDraft] = useState("");
  const dirty = base !== null && draft !== base.content;
  // A newer copy read from the drone replaces the text only while nothing is edited.
  if (file.data && file.data.sha !== base?.sha && !dirty) {
    setBase(file.data);
    setDraft(file.data.content);
  }
  const conflict = write.error instanceof ApiError && write.error.status === 409;

  const reload = () => {
    write.reset();
    setBase(null);
    void file.refetch();
  };
  const save = (baseSha: string | "current") =>
    write.mutate(
      { content: draft, baseSha },
      {
        onSuccess: (saved) => {
          setBase(saved);
        },
      },
    );

  if (file.error) {
    return <ErrorNote error={file.error} title={`Could not open ${path}`} onRetry={reload} />;
  }
  if (!base) return <p className="muted">Opening {path}…</p>;

  return (
    <div className="file-editor">
      <div className="file-editor-bar">
        <code>{path}</code>
        {dirty ? <span className="pill pill-busy">unsaved</span> : null}
        {!dirty && write.isSuccess ? <span className="muted small">saved</span> : null}
        <span className="spacer" />
        <button
          type="button"
          className="button small ghost"
          onClick={reload}
          disabled={write.isPending}
        >
          Reload
        </button>
        {writable ? (
          <button
            type="button"
            className="button small primary"
            onClick={() => save(base.sha)}
            disabled={!dirty || write.isPending || conflict}
          >
            {write.isPending ? "Saving…" : "Save"}
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
            <button type="button" className="button small" onClick={reload}>
              Load the drone's version (drop my edits)
            </button>
            <button type="button" className="button small danger" onClick={() => save("current")}>
              Overwrite with mine
            </button>
          </div>
        </div>
      ) : null}
      <ErrorNote error={conflict ? null : write.error} title="Not saved" />
      <Suspense fallback={<p className="muted">Loading the editor…</p>}>
        <CodeEditor
          path={path}
          value={draft}
          onChange={setDraft}
          readOnly={!writable}
          onSave={() => {
            if (writable && dirty && !conflict) save(base.sha);
          }}
          dark={isDarkTheme()}
        />
      </Suspense>
    </div>
  );
}
