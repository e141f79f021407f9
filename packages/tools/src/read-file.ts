// read_file: numbered lines of a text file, streamed so a large file costs only what is shown.
import { stat } from "node:fs/promises";
import { defineTool, ToolError } from "@gadget/agent";
import { z } from "zod";
import { resolveToolsOptions, type ToolsOptions } from "./options.ts";
import { imageTypeOf, readImage } from "./read-image.ts";
import { openRegularForRead } from "./regular-file.ts";
import { didYouMean } from "./suggest.ts";
import { cutLine, formatBytes, looksBinary, numberLine, plural } from "./text.ts";
import { resolveInWorkspace, type WorkspacePath } from "./workspace-path.ts";

const chunkSize = 256 * 1024;
/** Past this many bytes read_file stops counting the lines of the rest of the file. */
const maxCountedBytes = 64 * 1024 * 1024;

export const readFileInput = z.object({
  path: z.string().describe("File path relative to the workspace root, e.g. src/app.ts"),
  offset: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe("Line number to start reading from (1-based). Default 1."),
  limit: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe("Number of lines to read. Default and maximum 2000."),
});

export interface ReadLinesResult {
  lines: string[];
  firstLine: number;
  lastLine: number;
  /** Total lines in the file, or undefined when the file was too large to count. */
  totalLines: number | undefined;
  /** Why the output stopped before the end of the file, if it did. */
  stoppedBy: "limit" | "bytes" | undefined;
  size: number;
}

interface ReadLimits {
  maxLineLength: number;
  maxReadBytes: number;
}

/**
 * Reads lines `offset`…`offset+limit-1` (1-based) of a regular file inside the workspace as
 * numbered, cut lines (a FIFO or a link swapped in is refused, see openRegularForRead).
 */
export async function readNumberedLines(
  file: Pick<WorkspacePath, "absolute" | "root" | "relative">,
  offset: number,
  limit: number,
  limits: ReadLimits,
  signal?: AbortSignal,
): Promise<ReadLinesResult> {
  const handle = await openRegularForRead(file.absolute, file);
  try {
    const { size } = await handle.stat();
    const buffer = Buffer.allocUnsafe(chunkSize);
    const maxStoredBytes = limits.maxLineLength * 4;
    const lines: string[] = [];
    let outputBytes = 0;
    let lineNumber = 0;
    let collecting = true;
    let stoppedBy: ReadLinesResult["stoppedBy"];
    let parts: Buffer[] = [];
    let storedBytes = 0;
    let lineBytes = 0;
    let position = 0;
    let counted = true;

    const finishLine = () => {
      lineNumber++;
      if (collecting && lineNumber >= offset) {
        let text = Buffer.concat(parts, storedBytes).toString("utf8");
        if (text.endsWith("\r")) text = text.slice(0, -1);
        const shown =
          lineBytes > storedBytes
            ? `${text.slice(0, limits.maxLineLength)}… [line cut; ${formatBytes(lineBytes)} long]`
            : cutLine(text, limits.maxLineLength);
        const numbered = numberLine(lineNumber, shown);
        const bytes = Buffer.byteLength(numbered) + 1;
        if (lines.length > 0 && outputBytes + bytes > limits.maxReadBytes) {
          collecting = false;
          stoppedBy = "bytes";
        } else {
          lines.push(numbered);
          outputBytes += bytes;
          if (lines.length >= limit) {
            collecting = false;
            stoppedBy = "limit";
          }
        }
      }
      parts = [];
      storedBytes = 0;
      lineBytes = 0;
    };

    while (true) {
      signal?.throwIfAborted();
      if (!collecting && position > maxCountedBytes) {
        counted = false;
        break;
      }
      const { bytesRead } = await handle.read(buffer, 0, chunkSize, position);
      if (bytesRead === 0) break;
      position += bytesRead;
      const view = buffer.subarray(0, bytesRead);
      let start = 0;
      while (start < bytesRead) {
        const newline = view.indexOf(10, start);
        const end = newline === -1 ? bytesRead : newline;
        const wanted = collecting && lineNumber + 1 >= offset;
        if (wanted && storedBytes < maxStoredBytes) {
          const take = Math.min(end - start, maxStoredBytes - storedBytes);
          parts.push(Buffer.from(view.subarray(start, start + take)));
          storedBytes += take;
        }
        lineBytes += end - start;
        if (end === bytesRead) break;
        finishLine();
        start = end + 1;
      }
    }
    if (lineBytes > 0 || parts.length > 0) finishLine();
    const firstLine = Math.min(offset, lineNumber + 1);
    return {
      lines,
      firstLine,
      lastLine: firstLine + lines.length - 1,
      totalLines: counted ? lineNumber : undefined,
      stoppedBy:
        lines.length > 0 && firstLine + lines.length - 1 < lineNumber ? stoppedBy : undefined,
      size,
    };
  } finally {
    await handle.close();
  }
}

/** The read_file tool. */
export function createReadFileTool(toolOptions: ToolsOptions = {}) {
  const options = resolveToolsOptions(toolOptions);
  return defineTool({
    name: "read_file",
    description: [
      "Reads a text file from the workspace and returns its lines numbered like `cat -n`.",
      `Returns at most ${options.maxReadLines} lines and about ${formatBytes(options.maxReadBytes)} per call; lines longer than ${options.maxLineLength} characters are cut.`,
      "When the output stops early it says which offset to use to continue.",
      "Use offset and limit to read a part of a large file. Binary files are refused; an image (PNG, JPEG, GIF, WebP) is shown to models that take images.",
      "Read a file before editing it; the line numbers are for reference only and are not part of the content.",
    ].join(" "),
    inputSchema: readFileInput,
    permission: "read",
    describe: (input) => `Read ${input.path}`,
    async execute(input, context) {
      const target = await resolveInWorkspace(context.workspace, input.path);
      if (!target.exists) {
        throw new ToolError(
          "not_found",
          `File not found: ${target.relative}.${await didYouMean(target.root, target.relative)} Use glob or list_dir to find the right path.`,
        );
      }
      const stats = await stat(target.absolute);
      if (stats.isDirectory()) {
        throw new ToolError(
          "is_directory",
          `${target.relative} is a directory, not a file. Use list_dir to see what it contains.`,
        );
      }
      if (!stats.isFile()) {
        throw new ToolError("not_a_file", `${target.relative} is not a regular file.`);
      }
      const head = Buffer.alloc(Math.min(8192, stats.size));
      if (head.length > 0) {
        const handle = await openRegularForRead(target.absolute, target);
        try {
          await handle.read(head, 0, head.length, 0);
        } finally {
          await handle.close();
        }
      }
      const imageType = imageTypeOf(head);
      if (imageType) return readImage(target, imageType, stats.size, context);
      if (looksBinary(target.relative, head)) {
        throw new ToolError(
          "binary_file",
          `${target.relative} is a binary file (${formatBytes(stats.size)}); read_file shows text only. Use run_command with \`file ${target.relative}\` or \`xxd -l 256 ${target.relative}\` to inspect it.`,
        );
      }
      const offset = Math.max(1, input.offset ?? 1);
      const limit = Math.min(input.limit ?? options.maxReadLines, options.maxReadLines);
      const result = await readNumberedLines(target, offset, limit, options, context.signal);
      const total = result.totalLines;
      if (total === 0) {
        return {
          ok: true,
          output: `(${target.relative} is empty)`,
          summary: `Read ${target.relative} (empty)`,
          data: { path: target.relative, totalLines: 0 },
        };
      }
      if (result.lines.length === 0) {
        throw new ToolError(
          "invalid_offset",
          `offset=${offset} is past the end of ${target.relative}, which has ${plural(total ?? 0, "line")}.`,
        );
      }
      const of = total === undefined ? "" : ` of ${total}`;
      let footer = "";
      if (result.stoppedBy) {
        const why =
          result.stoppedBy === "bytes"
            ? `the ${formatBytes(options.maxReadBytes)} output limit was reached`
            : "the line limit was reached";
        footer = `\n\n(Showing lines ${result.firstLine}-${result.lastLine}${of}; ${why}. Use offset=${result.lastLine + 1} to continue.)`;
      } else if (result.firstLine > 1) {
        footer = `\n\n(Showing lines ${result.firstLine}-${result.lastLine}${of}; end of file.)`;
      }
      return {
        ok: true,
        output: `${result.lines.join("\n")}${footer}`,
        summary: `Read ${target.relative} (${result.firstLine === 1 && !result.stoppedBy ? plural(result.lines.length, "line") : `lines ${result.firstLine}-${result.lastLine}${of}`})`,
        data: {
          path: target.relative,
          firstLine: result.firstLine,
          lastLine: result.lastLine,
          totalLines: total,
          truncated: result.stoppedBy !== undefined,
        },
      };
    },
  });
}
