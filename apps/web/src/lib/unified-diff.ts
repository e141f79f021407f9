// Splits a `git diff` style unified diff into one part per file, with each line classified.

export type DiffLineKind = "add" | "del" | "context" | "hunk" | "meta";

export interface DiffLine {
  kind: DiffLineKind;
  text: string;
}

export interface FileDiff {
  path: string;
  /** The old path of a rename, when it differs. */
  oldPath: string | null;
  lines: DiffLine[];
  additions: number;
  deletions: number;
  binary: boolean;
}

function stripPrefix(path: string): string {
  return path.replace(/^[ab]\//, "");
}

/**
 * Parses the unified diff of a `changes` event into per-file diffs.
 * @example splitDiff(changes.diff).map((file) => file.path)
 */
export function splitDiff(diff: string): FileDiff[] {
  const files: FileDiff[] = [];
  let current: FileDiff | null = null;
  let inHunk = false;
  // Lines left in the current hunk, from its header, so "--- x" inside a hunk stays a deletion.
  let oldLeft = 0;
  let newLeft = 0;
  const start = (path: string, oldPath: string | null): FileDiff => {
    const file: FileDiff = { path, oldPath, lines: [], additions: 0, deletions: 0, binary: false };
    files.push(file);
    inHunk = false;
    return file;
  };
  for (const line of diff.split("\n")) {
    const git = /^diff --git a\/(.+?) b\/(.+)$/.exec(line);
    if (git) {
      const oldPath = git[1] ?? "";
      const path = git[2] ?? oldPath;
      current = start(path, oldPath !== path ? oldPath : null);
      current.lines.push({ kind: "meta", text: line });
      continue;
    }
    if (line.startsWith("--- ") && !inHunk) {
      // Plain diffs have no "diff --git" line: a "---" after a file's hunks starts the next file.
      if (!current || current.lines.some((entry) => entry.kind === "hunk")) {
        current = start(stripPrefix(line.slice(4).trim()), null);
      }
      current.lines.push({ kind: "meta", text: line });
      continue;
    }
    if (line.startsWith("+++ ") && !inHunk) {
      current ??= start("", null);
      const path = stripPrefix(line.slice(4).trim());
      if (path !== "/dev/null") current.path = path;
      current.lines.push({ kind: "meta", text: line });
      continue;
    }
    if (!current) continue;
    const file = current;
    const hunk = /^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@/.exec(line);
    if (hunk && (!inHunk || (oldLeft <= 0 && newLeft <= 0))) {
      inHunk = true;
      oldLeft = hunk[1] === undefined ? 1 : Number(hunk[1]);
      newLeft = hunk[2] === undefined ? 1 : Number(hunk[2]);
      file.lines.push({ kind: "hunk", text: line });
    } else if (!inHunk) {
      if (/^Binary files /.test(line)) file.binary = true;
      if (line) file.lines.push({ kind: "meta", text: line });
    } else if (line.startsWith("\\")) {
      file.lines.push({ kind: "meta", text: line });
    } else if (line.startsWith("+")) {
      file.additions += 1;
      newLeft -= 1;
      file.lines.push({ kind: "add", text: line });
    } else if (line.startsWith("-")) {
      file.deletions += 1;
      oldLeft -= 1;
      file.lines.push({ kind: "del", text: line });
    } else {
      oldLeft -= 1;
      newLeft -= 1;
      file.lines.push({ kind: "context", text: line });
    }
    if (inHunk && oldLeft <= 0 && newLeft <= 0) inHunk = false;
  }
  return files;
}
