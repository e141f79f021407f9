// The project's file tree, read directory by directory from the drone through the server.
import type { FileEntry } from "@gadget/protocol";
import { useState } from "react";
import { ErrorNote } from "../components/error-note.tsx";
import { type FilesOf, isDroneAway, useDirectory } from "../data/projects.ts";

export interface FileTreeProps {
  /** Whose files: the project's default branch, or a session's worktree. */
  of: FilesOf;
  selected: string | null;
  onOpen: (path: string) => void;
}

function sortEntries(entries: FileEntry[]): FileEntry[] {
  return entries
    .filter((entry) => entry.name !== ".git")
    .sort((a, b) =>
      a.type === b.type
        ? a.name.localeCompare(b.name)
        : a.type === "directory"
          ? -1
          : b.type === "directory"
            ? 1
            : a.name.localeCompare(b.name),
    );
}

/** What the tree says while no drone can list it, by the server's `reason`. */
const droneAwayWords: Record<string, string> = {
  offline: "No drone of yours is online. Start one: the project's files show here then.",
  no_checkout:
    "No online drone has a checkout of this project yet. The first prompt in a session clones it on the drone that runs it; its files show here then.",
  no_answer: "The drone holding this project did not answer in time. Looking again…",
  no_worktree:
    "No online drone holds this session's worktree. Start the drone that ran its turns: its files show here then.",
};

function Directory({ path, depth, props }: { path: string; depth: number; props: FileTreeProps }) {
  const listing = useDirectory(props.of, path);
  const [open, setOpen] = useState<Record<string, boolean>>({});
  const retry = () => void listing.refetch();
  if (listing.error) {
    const error = listing.error;
    // No drone could answer (none online, none with a checkout, none in time): not a failure of
    // the page. It says what to do and lists again on its own.
    if (depth === 0 && isDroneAway(error)) {
      const reason = (error.details as { reason?: unknown } | undefined)?.reason;
      return (
        <div className="note" role="status">
          <p>{droneAwayWords[String(reason)] ?? droneAwayWords.no_checkout}</p>
          <button type="button" className="button small" onClick={retry}>
            Look again
          </button>
        </div>
      );
    }
    return (
      <ErrorNote
        error={error}
        title={path ? `Could not list ${path}` : "Could not list files"}
        onRetry={retry}
      />
    );
  }
  if (!listing.data)
    return (
      <div className="tree-loading muted small" style={{ paddingLeft: depth * 14 + 8 }}>
        Loading…
      </div>
    );
  const entries = sortEntries(listing.data);
  if (entries.length === 0 && depth === 0)
    return <p className="muted small">The workspace is empty.</p>;
  return (
    <ul className="tree">
      {entries.map((entry) => {
        const isDirectory = entry.type === "directory";
        const isOpen = open[entry.path] ?? false;
        return (
          <li key={entry.path}>
            <button
              type="button"
              className={`tree-item ${props.selected === entry.path ? "tree-selected" : ""}`}
              aria-expanded={isDirectory ? isOpen : undefined}
              aria-current={props.selected === entry.path ? "true" : undefined}
              style={{ paddingLeft: depth * 14 + 8 }}
              onClick={() =>
                isDirectory
                  ? setOpen((current) => ({ ...current, [entry.path]: !isOpen }))
                  : props.onOpen(entry.path)
              }
            >
              <span className="tree-icon" aria-hidden="true">
                {isDirectory ? (isOpen ? "▾" : "▸") : "·"}
              </span>
              {entry.name}
            </button>
            {isDirectory && isOpen ? (
              <Directory path={entry.path} depth={depth + 1} props={props} />
            ) : null}
          </li>
        );
      })}
    </ul>
  );
}

/** A lazily expanded tree of the workspace. */
export function FileTree(props: FileTreeProps) {
  return (
    <nav className="file-tree" aria-label="Files">
      <Directory path="" depth={0} props={props} />
    </nav>
  );
}
