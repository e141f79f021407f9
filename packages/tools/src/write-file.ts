// write_file: creates or overwrites a file inside the workspace (parents created, size capped).
import { mkdir, stat } from "node:fs/promises";
import path from "node:path";
import { defineTool, ToolError } from "@gadget/agent";
import { z } from "zod";
import { resolveToolsOptions, type ToolsOptions } from "./options.ts";
import { writeRegularFile } from "./regular-file.ts";
import { countLines, formatBytes, plural } from "./text.ts";
import { resolveInWorkspace, type WorkspacePath } from "./workspace-path.ts";

export const writeFileInput = z.object({
  path: z.string().describe("File path relative to the workspace root, e.g. src/app.ts"),
  content: z.string().describe("The complete new content of the file"),
});

/**
 * Writes `content` to a path already confined by resolveInWorkspace: only a regular file, never
 * through a link that appeared since, never blocking on a named pipe (see openRegularForWrite).
 */
export async function writeConfined(target: WorkspacePath, content: string): Promise<void> {
  await mkdir(path.dirname(target.absolute), { recursive: true });
  await writeRegularFile(target.absolute, content, {
    root: target.root,
    relative: target.relative,
  });
}

/** The write_file tool. */
export function createWriteFileTool(toolOptions: ToolsOptions = {}) {
  const options = resolveToolsOptions(toolOptions);
  return defineTool({
    name: "write_file",
    description: [
      "Creates a file, or replaces the whole content of an existing one, inside the workspace. Parent directories are created.",
      "Prefer edit_file to change part of an existing file; read a file before overwriting it.",
      `Content is limited to ${formatBytes(options.maxWriteBytes)}. Files under .git/ cannot be written.`,
    ].join(" "),
    inputSchema: writeFileInput,
    permission: "write",
    describe: (input) => `Write ${input.path} (${plural(countLines(input.content), "line")})`,
    async execute(input, context) {
      const bytes = Buffer.byteLength(input.content, "utf8");
      if (bytes > options.maxWriteBytes) {
        throw new ToolError(
          "too_large",
          `Refused writing ${input.path}: the content is ${formatBytes(bytes)}, over the ${formatBytes(options.maxWriteBytes)} limit. Write smaller files, or generate large files with a command.`,
        );
      }
      const target = await resolveInWorkspace(context.workspace, input.path, { forWrite: true });
      if (target.exists && (await stat(target.absolute)).isDirectory()) {
        throw new ToolError(
          "is_directory",
          `${target.relative} is a directory; give the path of a file inside it.`,
        );
      }
      context.signal.throwIfAborted();
      try {
        await writeConfined(target, input.content);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === "ELOOP") {
          throw new ToolError(
            "path_outside_workspace",
            `Refused writing ${target.relative}: it became a symbolic link while writing.`,
          );
        }
        if (code === "ENOTDIR" || code === "EEXIST") {
          throw new ToolError(
            "not_a_directory",
            `Cannot create ${target.relative}: a part of the path is a file, not a directory.`,
          );
        }
        throw error;
      }
      const lines = plural(countLines(input.content), "line");
      const verb = target.exists ? "Overwrote" : "Created";
      return {
        ok: true,
        output: `${verb} ${target.relative} (${lines}, ${formatBytes(bytes)}).`,
        summary: `${verb} ${target.relative} (${lines})`,
        data: { path: target.relative, created: !target.exists, bytes },
      };
    },
  });
}
