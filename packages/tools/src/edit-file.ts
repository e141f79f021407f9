// edit_file: replaces an exact, unique string in a file, with a whitespace-tolerant fallback that
// applies only when it finds exactly one place.
import { stat } from "node:fs/promises";
import { defineTool, ToolError } from "@gadget/agent";
import { z } from "zod";
import { resolveToolsOptions, type ToolsOptions } from "./options.ts";
import { readRegularFile } from "./regular-file.ts";
import { didYouMean } from "./suggest.ts";
import { countLines, formatBytes, looksBinary, numberLine, plural } from "./text.ts";
import { resolveInWorkspace } from "./workspace-path.ts";
import { writeConfined } from "./write-file.ts";

export const editFileInput = z.object({
  path: z.string().describe("File path relative to the workspace root"),
  old_string: z
    .string()
    .describe(
      "The exact text to replace, including indentation; must be unique unless replace_all",
    ),
  new_string: z.string().describe("The text to put in its place"),
  replace_all: z
    .boolean()
    .optional()
    .describe("Replace every occurrence of old_string. Default false."),
});

export interface EditOutcome {
  content: string;
  replacements: number;
  /** Offset of the first replacement in the new content, and the length of what was put there. */
  firstStart: number;
  firstLength: number;
  /** The whitespace-tolerant fallback was used. */
  tolerant: boolean;
}

function countOccurrences(content: string, search: string): number {
  let count = 0;
  let index = content.indexOf(search);
  while (index !== -1) {
    count++;
    index = content.indexOf(search, index + search.length);
  }
  return count;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** old_string with every run of whitespace matching any run of whitespace, ends trimmed. */
function tolerantPattern(oldString: string): RegExp | undefined {
  const words = oldString.trim().split(/\s+/).filter(Boolean);
  if (words.length === 0) return undefined;
  return new RegExp(words.map(escapeRegExp).join("\\s+"), "g");
}

function lineOf(content: string, offset: number): number {
  let line = 1;
  let index = content.indexOf("\n");
  while (index !== -1 && index < offset) {
    line++;
    index = content.indexOf("\n", index + 1);
  }
  return line;
}

/**
 * Applies an edit to `content` or throws a ToolError saying how many matches there were.
 * @example
 * applyEdit("a = 1\nb = 2\n", "b = 2", "b = 3", false, "x.py").content; // "a = 1\nb = 3\n"
 */
export function applyEdit(
  content: string,
  oldString: string,
  newString: string,
  replaceAll: boolean,
  displayPath: string,
): EditOutcome {
  if (oldString.length === 0) {
    throw new ToolError(
      "invalid_edit",
      "old_string is empty. To create a file or replace all of its content use write_file.",
    );
  }
  if (oldString === newString) {
    throw new ToolError(
      "invalid_edit",
      "old_string and new_string are the same; nothing to change.",
    );
  }
  let search = oldString;
  let replacement = newString;
  // Files with Windows line endings still match text the model wrote with "\n".
  if (content.includes("\r\n") && !search.includes("\r\n") && search.includes("\n")) {
    search = search.replace(/\n/g, "\r\n");
    replacement = replacement.replace(/\r?\n/g, "\r\n");
  }
  const count = countOccurrences(content, search);
  if (count === 1 || (count > 1 && replaceAll)) {
    const firstStart = content.indexOf(search);
    const replaced =
      count === 1
        ? content.slice(0, firstStart) + replacement + content.slice(firstStart + search.length)
        : content.split(search).join(replacement);
    return {
      content: replaced,
      replacements: count,
      firstStart,
      firstLength: replacement.length,
      tolerant: false,
    };
  }
  if (count > 1) {
    throw new ToolError(
      "ambiguous_edit",
      `old_string was found ${count} times in ${displayPath}. Include more surrounding lines in old_string to make it unique, or set replace_all=true to change every occurrence.`,
    );
  }
  const pattern = tolerantPattern(search);
  const places = pattern ? [...content.matchAll(pattern)] : [];
  if (places.length === 1) {
    const place = places[0] as RegExpExecArray;
    const leading = /^\s*/.exec(search)?.[0] ?? "";
    const trailing = /\s*$/.exec(search)?.[0] ?? "";
    let adjusted = replacement;
    if (leading && adjusted.startsWith(leading)) adjusted = adjusted.slice(leading.length);
    if (trailing && adjusted.endsWith(trailing)) adjusted = adjusted.slice(0, -trailing.length);
    const start = place.index;
    return {
      content: content.slice(0, start) + adjusted + content.slice(start + place[0].length),
      replacements: 1,
      firstStart: start,
      firstLength: adjusted.length,
      tolerant: true,
    };
  }
  if (places.length > 1) {
    throw new ToolError(
      "ambiguous_edit",
      `old_string was not found exactly in ${displayPath}; ignoring whitespace differences it matches ${places.length} places. Copy old_string exactly from read_file output (without the line numbers) and include more surrounding lines.`,
    );
  }
  const firstLine = search
    .split("\n")
    .find((line) => line.trim().length > 0)
    ?.trim();
  let hint =
    " Read the file again with read_file and copy old_string exactly (without the line-number prefix).";
  if (firstLine) {
    const lines = content.split("\n");
    const at = lines.findIndex((line) => line.trim() === firstLine);
    if (at !== -1) {
      hint = ` Its first line matches line ${at + 1}, but the lines after it differ; read the file around line ${at + 1} and copy old_string exactly.`;
    }
  }
  throw new ToolError(
    "edit_not_found",
    `old_string was not found in ${displayPath} (0 matches, also when ignoring whitespace differences).${hint}`,
  );
}

/**
 * A few numbered lines around `[start, start+length)` of `content`, found without splitting the
 * whole file (edits on multi-megabyte files stay fast).
 */
export function snippetAround(
  content: string,
  start: number,
  length: number,
  around = 3,
): { snippet: string; line: number } {
  const line = lineOf(content, start);
  let from = content.lastIndexOf("\n", start - 1) + 1;
  let fromLine = line;
  while (fromLine > 1 && fromLine > line - around) {
    from = content.lastIndexOf("\n", from - 2) + 1;
    fromLine--;
  }
  const maxLines = 30;
  let to = start + length;
  let shownLines = line - fromLine + countLines(content.slice(start, start + length));
  for (let extra = 0; extra < around && shownLines < maxLines; extra++) {
    const next = content.indexOf("\n", to + 1);
    if (next === -1) {
      to = content.length;
      break;
    }
    to = next;
    shownLines++;
  }
  const lines = content.slice(from, to).replace(/\n$/, "").split("\n").slice(0, maxLines);
  const snippet = lines
    .map((text, index) => numberLine(fromLine + index, text.replace(/\r$/, "")))
    .join("\n");
  return { snippet, line };
}

/** The edit_file tool. */
export function createEditFileTool(toolOptions: ToolsOptions = {}) {
  const options = resolveToolsOptions(toolOptions);
  return defineTool({
    name: "edit_file",
    description: [
      "Replaces old_string with new_string in a file. old_string must match the file exactly (indentation included) and be unique, unless replace_all is true.",
      "When there is no exact match, a match ignoring whitespace differences is used only if it finds exactly one place.",
      "Read the file first; copy old_string from read_file output without the line-number prefix, with enough surrounding lines to be unique.",
      "Returns a snippet of the edited region. To create a file use write_file.",
    ].join(" "),
    inputSchema: editFileInput,
    permission: "write",
    describe: (input) =>
      `Edit ${input.path}${input.replace_all ? " (every occurrence)" : ""}: replace ${plural(countLines(input.old_string), "line")} with ${plural(countLines(input.new_string), "line")}`,
    async execute(input, context) {
      const target = await resolveInWorkspace(context.workspace, input.path, { forWrite: true });
      if (!target.exists) {
        throw new ToolError(
          "not_found",
          `File not found: ${target.relative}.${await didYouMean(target.root, target.relative)} To create a new file use write_file.`,
        );
      }
      const stats = await stat(target.absolute);
      if (!stats.isFile()) {
        throw new ToolError("not_a_file", `${target.relative} is not a regular file.`);
      }
      if (stats.size > options.maxWriteBytes) {
        throw new ToolError(
          "too_large",
          `${target.relative} is ${formatBytes(stats.size)}, over the ${formatBytes(options.maxWriteBytes)} edit limit. Change it with a command instead.`,
        );
      }
      const buffer = await readRegularFile(target.absolute, {
        root: target.root,
        relative: target.relative,
      });
      if (looksBinary(target.relative, buffer.subarray(0, 8192))) {
        throw new ToolError(
          "binary_file",
          `${target.relative} is a binary file; edit_file changes text only.`,
        );
      }
      const outcome = applyEdit(
        buffer.toString("utf8"),
        input.old_string,
        input.new_string,
        input.replace_all ?? false,
        target.relative,
      );
      const bytes = Buffer.byteLength(outcome.content, "utf8");
      if (bytes > options.maxWriteBytes) {
        throw new ToolError(
          "too_large",
          `The edited ${target.relative} would be ${formatBytes(bytes)}, over the ${formatBytes(options.maxWriteBytes)} limit.`,
        );
      }
      context.signal.throwIfAborted();
      await writeConfined(target, outcome.content);
      const { snippet, line: firstLine } = snippetAround(
        outcome.content,
        outcome.firstStart,
        outcome.firstLength,
      );
      const how = outcome.tolerant ? " (matched ignoring whitespace differences)" : "";
      const what =
        outcome.replacements === 1
          ? `replaced 1 occurrence at line ${firstLine}`
          : `replaced ${outcome.replacements} occurrences (first at line ${firstLine})`;
      return {
        ok: true,
        output: `Edited ${target.relative}: ${what}${how}.\n\n${snippet}`,
        summary: `Edited ${target.relative} (${what})`,
        data: {
          path: target.relative,
          replacements: outcome.replacements,
          line: firstLine,
          tolerant: outcome.tolerant,
        },
      };
    },
  });
}
