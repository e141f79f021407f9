// What a grep search produces, whichever engine ran it, and how the model sees it.
import { comparePaths } from "./walk.ts";

export interface GrepQuery {
  pattern: string;
  ignoreCase: boolean;
  /** Glob on file names (no slash) or paths relative to the search directory. */
  include: string | undefined;
  /** Lines of context before and after each match. */
  context: number;
  maxMatches: number;
  maxLineLength: number;
}

export interface GrepLine {
  line: number;
  text: string;
  match: boolean;
}

export interface GrepFile {
  /** Path relative to the workspace root. */
  path: string;
  lines: GrepLine[];
}

export interface GrepResult {
  files: GrepFile[];
  matches: number;
  /** More matches exist than were kept. */
  truncated: boolean;
  engine: "ripgrep" | "node";
}

/** Keeps only context lines within `context` lines of a kept match (the engines may overshoot). */
export function trimContext(lines: GrepLine[], context: number): GrepLine[] {
  const matchLines = lines.filter((line) => line.match).map((line) => line.line);
  if (matchLines.length === 0) return [];
  return lines.filter(
    (line) =>
      line.match || matchLines.some((matchLine) => Math.abs(matchLine - line.line) <= context),
  );
}

/** Sorts files by path and lines by number, so both engines give the same text. */
export function normalizeResult(result: GrepResult, context: number): GrepResult {
  const files = result.files
    .map((file) => ({
      path: file.path,
      lines: trimContext(
        [...file.lines].sort((a, b) => a.line - b.line),
        context,
      ),
    }))
    .filter((file) => file.lines.length > 0)
    .sort((a, b) => comparePaths(a.path, b.path));
  return { ...result, files };
}

/** `path:line:text` for matches, `path-line-text` for context, `--` between separate groups. */
export function renderGrepLines(result: GrepResult, context: number): string[] {
  const output: string[] = [];
  for (const file of result.files) {
    let previous: number | undefined;
    if (context > 0 && output.length > 0) output.push("--");
    for (const line of file.lines) {
      if (previous !== undefined && line.line > previous + 1) output.push("--");
      output.push(
        `${file.path}${line.match ? ":" : "-"}${line.line}${line.match ? ":" : "-"}${line.text}`,
      );
      previous = line.line;
    }
  }
  return output;
}
