// Per-file diffs of a turn's `changes` event: a file list with +/- counts and the lines of each.
import type { FileChange } from "@gadget/protocol";
import { useMemo, useState } from "react";
import { splitDiff } from "../lib/unified-diff.ts";

export interface DiffViewProps {
  files: FileChange[];
  diff: string;
  truncated: boolean;
}

export function DiffView({ files, diff, truncated }: DiffViewProps) {
  const parts = useMemo(() => splitDiff(diff), [diff]);
  const [open, setOpen] = useState<Record<string, boolean>>({});
  if (files.length === 0 && parts.length === 0) {
    return <p className="muted">This turn changed no files.</p>;
  }
  const byPath = new Map(parts.map((part) => [part.path, part]));
  // Every changed file gets a row, even one the capped diff no longer covers.
  const rows = [
    ...files.map((file) => ({ path: file.path, status: file.status, part: byPath.get(file.path) })),
    ...parts
      .filter((part) => !files.some((file) => file.path === part.path))
      .map((part) => ({ path: part.path, status: "modified" as const, part })),
  ];
  return (
    <div className="diff-view">
      {truncated ? (
        <p className="note">The diff was too large and is cut short; the file list is complete.</p>
      ) : null}
      {rows.map(({ path, status, part }) => {
        const isOpen = open[path] ?? rows.length <= 5;
        return (
          <section key={path} className="diff-file">
            <button
              type="button"
              className="diff-file-header"
              aria-expanded={isOpen}
              onClick={() => setOpen((current) => ({ ...current, [path]: !isOpen }))}
            >
              <span className={`badge badge-${status}`}>{status}</span>
              <code>{path}</code>
              {part ? (
                <span className="diff-counts">
                  <span className="plus">+{part.additions}</span>{" "}
                  <span className="minus">−{part.deletions}</span>
                </span>
              ) : null}
            </button>
            {isOpen ? (
              part ? (
                part.binary ? (
                  <p className="muted diff-note">Binary file.</p>
                ) : (
                  <pre className="diff-lines">
                    {part.lines
                      .filter((line) => line.kind !== "meta")
                      .map((line, index) => (
                        <div key={index} className={`diff-line diff-${line.kind}`}>
                          {line.text || " "}
                        </div>
                      ))}
                  </pre>
                )
              ) : (
                <p className="muted diff-note">No diff for this file (cut from the report).</p>
              )
            ) : null}
          </section>
        );
      })}
    </div>
  );
}
