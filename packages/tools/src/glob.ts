// glob: files whose path matches a glob pattern, as git sees the tree (ignored files left out).
import { stat } from "node:fs/promises";
import path from "node:path";
import { defineTool, ToolError } from "@gadget/agent";
import picomatch from "picomatch";
import { z } from "zod";
import { resolveToolsOptions, type ToolsOptions } from "./options.ts";
import { walk } from "./walk.ts";
import { isInside, resolveInWorkspace, resolveRealPath, toRelative } from "./workspace-path.ts";

export const globInput = z.object({
  pattern: z
    .string()
    .min(1)
    .describe('Glob pattern relative to path, e.g. "**/*.ts", "src/**/*.test.{ts,tsx}", "*.json"'),
  path: z
    .string()
    .optional()
    .describe("Directory to search, relative to the workspace root. Default: the root."),
});

export interface GlobResult {
  /** Paths relative to the workspace root, in walk order. */
  paths: string[];
  truncated: boolean;
}

/** Refuses patterns that would look outside the search directory. */
function checkPattern(pattern: string): void {
  if (path.isAbsolute(pattern) || pattern.startsWith("~")) {
    throw new ToolError(
      "path_outside_workspace",
      `Refused pattern "${pattern}": patterns are relative to the workspace (or to path); drop the leading "/".`,
    );
  }
  if (pattern.split("/").includes("..")) {
    throw new ToolError(
      "path_outside_workspace",
      `Refused pattern "${pattern}": ".." would leave the search directory. Use the path parameter to choose where to search.`,
    );
  }
}

/**
 * Files (and symbolic links) under `directory` whose path relative to it matches `pattern`,
 * with standard glob semantics (`*` stays in one directory, `**` crosses directories).
 */
export async function globFiles(
  root: string,
  directory: string,
  pattern: string,
  maxResults: number,
  signal?: AbortSignal,
): Promise<GlobResult> {
  checkPattern(pattern);
  const normalized = pattern.replace(/^\.\//, "");
  const isMatch = picomatch(normalized, { dot: true });
  const scan = picomatch.scan(normalized);
  const base = scan.isGlob ? scan.base : "";
  const start = base ? path.join(directory, base) : directory;
  if (!isInside(root, await resolveRealPath(start))) {
    throw new ToolError(
      "path_outside_workspace",
      `Refused pattern "${pattern}": "${base}" leads outside the workspace through a symbolic link.`,
    );
  }
  const isDirectory = await stat(start).then(
    (stats) => stats.isDirectory(),
    () => false,
  );
  if (!scan.isGlob) {
    const exists = await stat(start).then(
      (stats) => stats.isFile(),
      () => false,
    );
    return { paths: exists ? [toRelative(root, start)] : [], truncated: false };
  }
  if (!isDirectory) return { paths: [], truncated: false };
  const globSegments = scan.glob.split("/");
  const maxDepth = globSegments.includes("**") ? undefined : globSegments.length;
  const paths: string[] = [];
  let truncated = false;
  for await (const entry of walk(root, start, { signal, ...(maxDepth ? { maxDepth } : {}) })) {
    if (entry.type === "directory" || entry.type === "other") continue;
    const relativeToSearch = toRelative(directory, entry.absolute);
    if (!isMatch(relativeToSearch)) continue;
    if (paths.length >= maxResults) {
      truncated = true;
      break;
    }
    paths.push(entry.relative);
  }
  return { paths, truncated };
}

/** The glob tool. */
export function createGlobTool(toolOptions: ToolsOptions = {}) {
  const options = resolveToolsOptions(toolOptions);
  return defineTool({
    name: "glob",
    description: [
      'Finds files by path pattern, e.g. "**/*.ts" for every TypeScript file or "src/**/*.test.ts".',
      "`*` matches within one directory, `**` across directories, `{a,b}` either; a pattern without a slash only matches in the search directory itself.",
      "Files ignored by .gitignore, .git and node_modules are left out.",
      `Returns at most ${options.maxGlobResults} paths relative to the workspace root, sorted by path; use grep to search file contents.`,
    ].join(" "),
    inputSchema: globInput,
    permission: "read",
    describe: (input) => `Find ${input.pattern}${input.path ? ` in ${input.path}` : ""}`,
    async execute(input, context) {
      const target = await resolveInWorkspace(context.workspace, input.path ?? ".");
      if (!target.exists || !(await stat(target.absolute)).isDirectory()) {
        throw new ToolError(
          "not_a_directory",
          `${target.relative} is not a directory of the workspace. Give a directory as path, or leave it out to search the whole workspace.`,
        );
      }
      const result = await globFiles(
        target.root,
        target.absolute,
        input.pattern,
        options.maxGlobResults,
        context.signal,
      );
      const where = target.relative === "." ? "" : ` in ${target.relative}`;
      if (result.paths.length === 0) {
        return {
          ok: true,
          output: `No files match "${input.pattern}"${where}.${input.pattern.includes("/") ? "" : ` Patterns without a slash only match at the top of the search directory; try "**/${input.pattern}".`}`,
          summary: `Found no files matching ${input.pattern}${where}`,
          data: { paths: [], truncated: false },
        };
      }
      const footer = result.truncated
        ? `\n\n(Showing the first ${options.maxGlobResults} files; there are more. Narrow the pattern or the path.)`
        : "";
      return {
        ok: true,
        output: `${result.paths.join("\n")}${footer}`,
        summary: `Found ${result.paths.length}${result.truncated ? "+" : ""} files matching ${input.pattern}${where}`,
        data: result,
      };
    },
  });
}
