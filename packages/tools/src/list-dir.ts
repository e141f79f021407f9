// list_dir: a directory tree as git sees it, breadth first so a cut listing still shows the top levels.
import { readlink, stat } from "node:fs/promises";
import { defineTool, ToolError } from "@gadget/agent";
import { z } from "zod";
import { resolveToolsOptions, type ToolsOptions } from "./options.ts";
import { didYouMean } from "./suggest.ts";
import { IgnoreRules, readVisibleEntries, type WalkEntry } from "./walk.ts";
import { resolveInWorkspace } from "./workspace-path.ts";

export const listDirInput = z.object({
  path: z
    .string()
    .optional()
    .describe("Directory relative to the workspace root. Default: the root."),
  depth: z.number().int().min(1).max(10).optional().describe("How many levels to show. Default 2."),
});

export interface DirectoryListing {
  /** The tree as indented lines, directories ending in "/". */
  lines: string[];
  entries: number;
  truncated: boolean;
}

/**
 * Lists `directory` (absolute, inside `root`) breadth first up to `depth` levels and `maxEntries`
 * entries, honouring .gitignore and skipping .git and node_modules.
 */
export async function listDirectory(
  root: string,
  directory: string,
  depth: number,
  maxEntries: number,
  signal?: AbortSignal,
): Promise<DirectoryListing> {
  const children = new Map<string, WalkEntry[]>();
  const rootRules = await IgnoreRules.forDirectory(root, directory);
  let queue: { entry: WalkEntry | undefined; absolute: string; rules: IgnoreRules }[] = [
    { entry: undefined, absolute: directory, rules: rootRules },
  ];
  let count = 0;
  let truncated = false;
  const unlisted = new Set<WalkEntry>();
  for (let level = 1; level <= depth && queue.length > 0 && !truncated; level++) {
    const next: typeof queue = [];
    for (const item of queue) {
      signal?.throwIfAborted();
      if (truncated) {
        if (item.entry) unlisted.add(item.entry);
        continue;
      }
      const rules = item.entry ? await item.rules.child(root, item.absolute) : item.rules;
      const entries = await readVisibleEntries(root, item.absolute, rules, level);
      const room = maxEntries - count;
      const shown = entries.slice(0, room);
      if (shown.length < entries.length) truncated = true;
      if (item.entry && shown.length < entries.length) unlisted.add(item.entry);
      count += shown.length;
      children.set(item.absolute, shown);
      for (const entry of shown) {
        if (entry.type === "directory") next.push({ entry, absolute: entry.absolute, rules });
      }
    }
    queue = next;
  }
  if (truncated) {
    for (const item of queue) if (item.entry && item.entry.depth < depth) unlisted.add(item.entry);
  }

  const lines: string[] = [];
  const render = async (absolute: string, indent: string) => {
    for (const entry of children.get(absolute) ?? []) {
      if (entry.type === "directory") {
        const more = unlisted.has(entry) ? " …" : "";
        lines.push(`${indent}${entry.name}/${more}`);
        await render(entry.absolute, `${indent}  `);
      } else if (entry.type === "symlink") {
        const target = await readlink(entry.absolute).catch(() => "?");
        lines.push(`${indent}${entry.name} -> ${target}`);
      } else {
        lines.push(`${indent}${entry.name}`);
      }
    }
  };
  await render(directory, "");
  return { lines, entries: count, truncated };
}

/** The list_dir tool. */
export function createListDirTool(toolOptions: ToolsOptions = {}) {
  const options = resolveToolsOptions(toolOptions);
  return defineTool({
    name: "list_dir",
    description: [
      "Lists a directory of the workspace as an indented tree (directories end in /).",
      "Files ignored by .gitignore, .git and node_modules are left out.",
      `Shows at most ${options.maxListEntries} entries, breadth first; when it cuts, it says so: list a subdirectory or use a smaller depth.`,
      "Use glob to find files by name pattern.",
    ].join(" "),
    inputSchema: listDirInput,
    permission: "read",
    describe: (input) => `List ${input.path ?? "."}`,
    async execute(input, context) {
      const target = await resolveInWorkspace(context.workspace, input.path ?? ".");
      if (!target.exists) {
        throw new ToolError(
          "not_found",
          `Directory not found: ${target.relative}.${await didYouMean(target.root, target.relative)}`,
        );
      }
      if (!(await stat(target.absolute)).isDirectory()) {
        throw new ToolError(
          "not_a_directory",
          `${target.relative} is a file, not a directory. Use read_file to read it.`,
        );
      }
      const depth = input.depth ?? 2;
      const listing = await listDirectory(
        target.root,
        target.absolute,
        depth,
        options.maxListEntries,
        context.signal,
      );
      const header = `${target.relative === "." ? "." : target.relative}/`;
      const body = listing.lines.length > 0 ? listing.lines.join("\n") : "(empty directory)";
      const footer = listing.truncated
        ? `\n\n(Listing cut at ${options.maxListEntries} entries; directories marked … have more. List a subdirectory or use a smaller depth.)`
        : "";
      return {
        ok: true,
        output: `${header}\n${body}${footer}`,
        summary: `Listed ${target.relative} (${listing.entries} entries${listing.truncated ? ", cut" : ""})`,
        data: { path: target.relative, entries: listing.entries, truncated: listing.truncated },
      };
    },
  });
}
