// Pre-enrichment sources (docs/architecture.md, the engine's phase 1): what the model should know about the workspace before
// its first pass — the tree, the README, git status and the project's own instructions for agents.
import { readdir } from "node:fs/promises";
import path from "node:path";
import type { ContextSource } from "@gadget/agent";
import { runGit } from "./git.ts";
import { listDirectory } from "./list-dir.ts";
import { readNumberedLines } from "./read-file.ts";
import { workspaceRoot } from "./workspace-path.ts";

export interface ContextSourceOptions {
  /** Entries in the repository tree summary. Default: 200. */
  maxTreeEntries?: number;
  /** Depth of the tree summary. Default: 2. */
  treeDepth?: number;
  /** Lines of each file head (README, AGENTS.md, CONTRIBUTING.md). Default: 80. */
  maxHeadLines?: number;
  /** Bytes of each file head. Default: 6,144. */
  maxHeadBytes?: number;
  /** Bytes of `git status` output. Default: 4,096. */
  maxStatusBytes?: number;
}

/** The first file in the root whose name matches, case-insensitively, one of `names` (in order). */
async function findRootFile(root: string, names: readonly string[]): Promise<string | undefined> {
  const entries = await readdir(root, { withFileTypes: true }).catch(() => []);
  for (const wanted of names) {
    const entry = entries.find(
      (candidate) => candidate.isFile() && candidate.name.toLowerCase() === wanted,
    );
    if (entry) return entry.name;
  }
  return undefined;
}

async function fileHead(root: string, name: string, lines: number, bytes: number): Promise<string> {
  const file = { absolute: path.join(root, name), root, relative: name };
  const result = await readNumberedLines(file, 1, lines, {
    maxLineLength: 500,
    maxReadBytes: bytes,
  });
  const text = result.lines.map((line) => line.replace(/^ *\d+\t/, "")).join("\n");
  const more =
    result.totalLines !== undefined && result.totalLines > result.lastLine
      ? `\n… (${result.totalLines - result.lastLine} more lines; read_file ${name} for the rest)`
      : "";
  return `${text}${more}`;
}

/**
 * Context sources for the engine's pre-enrichment: repository tree, README head, git status
 * and recent commits, and AGENTS.md / CONTRIBUTING.md heads. Each returns null when it has
 * nothing to say.
 * @example
 * const engineOptions = { contextSources: workspaceContextSources({ maxTreeEntries: 100 }) };
 */
export function workspaceContextSources(options: ContextSourceOptions = {}): ContextSource[] {
  const maxTreeEntries = options.maxTreeEntries ?? 200;
  const treeDepth = options.treeDepth ?? 2;
  const maxHeadLines = options.maxHeadLines ?? 80;
  const maxHeadBytes = options.maxHeadBytes ?? 6 * 1024;
  const maxStatusBytes = options.maxStatusBytes ?? 4 * 1024;
  return [
    {
      name: "repository_tree",
      async load({ signal, workspace }) {
        const root = await workspaceRoot(workspace);
        const listing = await listDirectory(root, root, treeDepth, maxTreeEntries, signal);
        if (listing.entries === 0) return "## Repository tree\n(the workspace is empty)";
        const cut = listing.truncated
          ? `\n(cut at ${maxTreeEntries} entries; use list_dir for more)`
          : "";
        return `## Repository tree (depth ${treeDepth}, .gitignore applied)\n\`\`\`\n${listing.lines.join("\n")}\n\`\`\`${cut}`;
      },
    },
    {
      name: "readme",
      async load({ workspace }) {
        const root = await workspaceRoot(workspace);
        const name = await findRootFile(root, [
          "readme.md",
          "readme",
          "readme.rst",
          "readme.txt",
          "readme.adoc",
        ]);
        if (!name) return null;
        return `## ${name} (head)\n${await fileHead(root, name, maxHeadLines, maxHeadBytes)}`;
      },
    },
    {
      name: "git_status",
      async load({ signal, workspace }) {
        const root = await workspaceRoot(workspace);
        const status = await runGit(["status", "--short", "--branch"], {
          cwd: root,
          signal,
          maxOutputBytes: maxStatusBytes,
        }).catch(() => undefined);
        if (!status || (status.code !== 0 && !status.truncated)) return null;
        const log = await runGit(["log", "--oneline", "--no-decorate", "-5"], {
          cwd: root,
          signal,
          maxOutputBytes: 2048,
        }).catch(() => undefined);
        const commits =
          log && log.code === 0 && log.stdout.trim()
            ? `\nRecent commits:\n${log.stdout.trim()}`
            : "";
        const cut = status.truncated ? "\n… (cut; run `git status` for all of it)" : "";
        return `## git status\n\`\`\`\n${status.stdout.trim()}${cut}\n\`\`\`${commits}`;
      },
    },
    {
      name: "project_guidelines",
      async load({ workspace }) {
        const root = await workspaceRoot(workspace);
        const parts: string[] = [];
        for (const names of [["agents.md"], ["contributing.md", "contributing"]]) {
          const name = await findRootFile(root, names);
          if (name)
            parts.push(
              `## ${name} (head)\n${await fileHead(root, name, maxHeadLines, maxHeadBytes)}`,
            );
        }
        return parts.length > 0 ? parts.join("\n\n") : null;
      },
    },
  ];
}
