// grep: regular-expression search over the workspace, on ripgrep when present, else in Node.
import { defineTool, ToolError } from "@gadget/agent";
import { z } from "zod";
import { grepWithNode } from "./grep-node.ts";
import {
  type GrepQuery,
  type GrepResult,
  normalizeResult,
  renderGrepLines,
} from "./grep-result.ts";
import { findOnPath, grepWithRipgrep } from "./grep-ripgrep.ts";
import { type ResolvedToolsOptions, resolveToolsOptions, type ToolsOptions } from "./options.ts";
import { didYouMean } from "./suggest.ts";
import { plural } from "./text.ts";
import { resolveInWorkspace } from "./workspace-path.ts";

export const grepInput = z.object({
  pattern: z
    .string()
    .min(1)
    .describe('Regular expression to search for, e.g. "function\\s+load" or "TODO"'),
  path: z
    .string()
    .optional()
    .describe("File or directory to search, relative to the workspace root. Default: the root."),
  include: z
    .string()
    .optional()
    .describe('Only search files matching this glob, e.g. "*.ts" or "*.{ts,tsx}"'),
  ignore_case: z.boolean().optional().describe("Case-insensitive search. Default false."),
  context: z
    .number()
    .int()
    .min(0)
    .max(10)
    .optional()
    .describe("Lines of context to show before and after each match (0-10). Default 0."),
});

/** Picks the search engine once per tools instance: the configured ripgrep, `rg` on PATH, or Node. */
export function ripgrepLocator(options: ResolvedToolsOptions): () => Promise<string | undefined> {
  let located: Promise<string | undefined> | undefined;
  return () => {
    if (options.ripgrepPath === null) return Promise.resolve(undefined);
    if (options.ripgrepPath !== undefined) return Promise.resolve(options.ripgrepPath);
    located ??= findOnPath("rg", options.env.PATH).then((found) => {
      options.logger?.debug(
        { ripgrep: found ?? null },
        found ? "grep uses ripgrep" : "ripgrep not found; grep uses the Node fallback",
      );
      return found;
    });
    return located;
  };
}

export interface GrepRunOptions {
  ripgrepPath: string | undefined;
  env: Record<string, string | undefined>;
  signal?: AbortSignal;
}

/** Searches `relative` (file or directory, already confined) with whichever engine is available. */
export async function runGrep(
  target: { root: string; absolute: string; relative: string },
  query: GrepQuery,
  run: GrepRunOptions,
): Promise<GrepResult> {
  let result: GrepResult | undefined;
  if (run.ripgrepPath) {
    try {
      result = await grepWithRipgrep(
        run.ripgrepPath,
        { root: target.root, relative: target.relative },
        query,
        run.env,
        run.signal,
      );
    } catch (error) {
      // A missing or broken ripgrep binary falls back; the model's mistakes do not.
      if (error instanceof ToolError || run.signal?.aborted) throw error;
    }
  }
  result ??= await grepWithNode(
    { root: target.root, absolute: target.absolute },
    query,
    run.signal,
  );
  return normalizeResult(result, query.context);
}

/** The grep tool. */
export function createGrepTool(toolOptions: ToolsOptions = {}) {
  const options = resolveToolsOptions(toolOptions);
  const locateRipgrep = ripgrepLocator(options);
  return defineTool({
    name: "grep",
    description: [
      "Searches file contents with a regular expression (ripgrep syntax) and returns matching lines as path:line:text.",
      "Files ignored by .gitignore, .git, node_modules and binary files are skipped.",
      `Returns at most ${options.maxGrepMatches} matching lines; long lines are cut around the match.`,
      "Narrow a search with path (a file or directory) and include (a file-name glob such as *.ts). Use context to see surrounding lines.",
    ].join(" "),
    inputSchema: grepInput,
    permission: "read",
    describe: (input) => `Search for ${input.pattern}${input.path ? ` in ${input.path}` : ""}`,
    async execute(input, context) {
      const target = await resolveInWorkspace(context.workspace, input.path ?? ".");
      if (!target.exists) {
        throw new ToolError(
          "not_found",
          `Path not found: ${target.relative}.${await didYouMean(target.root, target.relative)}`,
        );
      }
      const contextLines = input.context ?? 0;
      const query: GrepQuery = {
        pattern: input.pattern,
        ignoreCase: input.ignore_case ?? false,
        include: input.include,
        context: contextLines,
        maxMatches: options.maxGrepMatches,
        maxLineLength: options.maxGrepLineLength,
      };
      const result = await runGrep(
        { root: target.root, absolute: target.absolute, relative: target.relative },
        query,
        { ripgrepPath: await locateRipgrep(), env: options.env, signal: context.signal },
      );
      const where = target.relative === "." ? "" : ` in ${target.relative}`;
      const filter = input.include ? ` (files matching ${input.include})` : "";
      if (result.matches === 0) {
        return {
          ok: true,
          output: `No matches for /${input.pattern}/${where}${filter}.`,
          summary: `Searched for ${input.pattern}${where}: no matches`,
          data: { matches: 0, files: 0, truncated: false, engine: result.engine },
        };
      }
      const counts = `${plural(result.matches, "match")} in ${plural(result.files.length, "file")}`;
      const header = result.truncated
        ? `Showing the first ${counts}; there are more. Narrow your search with path, include or a more specific pattern.`
        : `Found ${counts}.`;
      return {
        ok: true,
        output: `${header}\n\n${renderGrepLines(result, contextLines).join("\n")}`,
        summary: `Searched for ${input.pattern}${where}: ${result.truncated ? "more than " : ""}${counts}`,
        data: {
          matches: result.matches,
          files: result.files.length,
          truncated: result.truncated,
          engine: result.engine,
        },
      };
    },
  });
}
