// Walks the workspace the way git sees it: nested .gitignore files and .git/info/exclude honoured,
// .git and node_modules skipped, symbolic links listed but never followed.
import type { Dirent } from "node:fs";
import { readdir } from "node:fs/promises";
import path from "node:path";
import ignore, { type Ignore } from "ignore";
import { readOwnTextFile } from "./regular-file.ts";
import { toRelative } from "./workspace-path.ts";

/** Directory names never descended into. */
export const skippedDirectoryNames: ReadonlySet<string> = new Set([".git", "node_modules"]);

export type EntryType = "file" | "directory" | "symlink" | "other";

export interface WalkEntry {
  /** Forward-slash path relative to the workspace root. */
  relative: string;
  absolute: string;
  name: string;
  type: EntryType;
  /** 1 for the start directory's children. */
  depth: number;
}

interface IgnoreLevel {
  /** Relative path of the directory the rules belong to ("" for the root). */
  base: string;
  rules: Ignore;
}

/** The ignore rules in force in one directory: its own .gitignore plus its ancestors'. */
export class IgnoreRules {
  private constructor(private readonly levels: readonly IgnoreLevel[]) {}

  /** Rules for `directory` (absolute, under `root`), loading every .gitignore from the root down. */
  static async forDirectory(root: string, directory: string): Promise<IgnoreRules> {
    let rules = new IgnoreRules([]);
    const exclude = await readOwnTextFile(path.join(root, ".git", "info", "exclude"));
    if (exclude) rules = new IgnoreRules([{ base: "", rules: ignore().add(exclude) }]);
    const relative = toRelative(root, directory);
    const parts = relative === "." ? [] : relative.split("/");
    let current = root;
    rules = await rules.child(root, current);
    for (const part of parts) {
      current = path.join(current, part);
      if (rules.ignores(toRelative(root, current), true)) {
        // Asked explicitly for an ignored directory (e.g. dist): show what is in it, honouring
        // only the .gitignore files inside it, as ripgrep does for a path it is given.
        return IgnoreRules.forDirectory(directory, directory).then((inner) =>
          inner.rebase(root, directory),
        );
      }
      rules = await rules.child(root, current);
    }
    return rules;
  }

  /** The same rules for a walk whose root is `root` instead of `base` (an ancestor of it). */
  rebase(root: string, base: string): IgnoreRules {
    const prefix = toRelative(root, base);
    return new IgnoreRules(
      this.levels.map((level) => ({
        base: level.base === "" ? prefix : `${prefix}/${level.base}`,
        rules: level.rules,
      })),
    );
  }

  /** The rules for a subdirectory: these plus its own .gitignore, if it has one. */
  async child(root: string, directory: string): Promise<IgnoreRules> {
    // The model may have made .gitignore a named pipe or a link: read only a regular file.
    const text = await readOwnTextFile(path.join(directory, ".gitignore"));
    if (!text) return this;
    const base = toRelative(root, directory);
    return new IgnoreRules([
      ...this.levels,
      { base: base === "." ? "" : base, rules: ignore().add(text) },
    ]);
  }

  /** Whether the entry at `relative` (from the workspace root) is ignored. Deeper files win. */
  ignores(relative: string, isDirectory: boolean): boolean {
    let ignored = false;
    for (const level of this.levels) {
      const local = level.base === "" ? relative : relative.slice(level.base.length + 1);
      if (local === "" || local.startsWith("../")) continue;
      let result: { ignored: boolean; unignored: boolean };
      try {
        result = level.rules.test(isDirectory ? `${local}/` : local);
      } catch {
        continue; // a name the library cannot parse is simply not ignored
      }
      if (result.ignored) ignored = true;
      else if (result.unignored) ignored = false;
    }
    return ignored;
  }
}

function entryType(dirent: Dirent): EntryType {
  if (dirent.isSymbolicLink()) return "symlink";
  if (dirent.isDirectory()) return "directory";
  if (dirent.isFile()) return "file";
  return "other";
}

/** Orders paths as a depth-first walk with sorted names does (segment by segment). */
export function comparePaths(a: string, b: string): number {
  const left = a.split("/");
  const right = b.split("/");
  const length = Math.min(left.length, right.length);
  for (let index = 0; index < length; index++) {
    const x = left[index] as string;
    const y = right[index] as string;
    if (x !== y) return x < y ? -1 : 1;
  }
  return left.length - right.length;
}

/** The visible entries of one directory, sorted by name, with ignored and skipped ones removed. */
export async function readVisibleEntries(
  root: string,
  directory: string,
  rules: IgnoreRules,
  depth: number,
): Promise<WalkEntry[]> {
  let dirents: Dirent[];
  try {
    dirents = await readdir(directory, { withFileTypes: true });
  } catch {
    return [];
  }
  const entries: WalkEntry[] = [];
  for (const dirent of dirents) {
    const type = entryType(dirent);
    if (type === "directory" && skippedDirectoryNames.has(dirent.name)) continue;
    if (dirent.name === ".git") continue;
    const absolute = path.join(directory, dirent.name);
    const relative = toRelative(root, absolute);
    if (rules.ignores(relative, type === "directory")) continue;
    entries.push({ relative, absolute, name: dirent.name, type, depth });
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return entries;
}

export interface WalkOptions {
  /** Deepest level yielded (1 = the start directory's children). Default: unlimited. */
  maxDepth?: number;
  signal?: AbortSignal;
  /** Skips a directory (and what is under it) when this returns false. */
  enterDirectory?: (entry: WalkEntry) => boolean;
}

/**
 * Yields every visible entry under `start` depth-first in name order (directories before
 * their contents).
 * @example
 * for await (const entry of walk(root, root)) if (entry.type === "file") console.log(entry.relative);
 */
export async function* walk(
  root: string,
  start: string,
  options: WalkOptions = {},
): AsyncGenerator<WalkEntry> {
  const maxDepth = options.maxDepth ?? Number.POSITIVE_INFINITY;
  const startRules = await IgnoreRules.forDirectory(root, start);
  const stack: { entries: WalkEntry[]; index: number; rules: IgnoreRules }[] = [
    { entries: await readVisibleEntries(root, start, startRules, 1), index: 0, rules: startRules },
  ];
  while (stack.length > 0) {
    options.signal?.throwIfAborted();
    const frame = stack[stack.length - 1] as (typeof stack)[number];
    const entry = frame.entries[frame.index++];
    if (!entry) {
      stack.pop();
      continue;
    }
    yield entry;
    if (entry.type !== "directory" || entry.depth >= maxDepth) continue;
    if (options.enterDirectory && !options.enterDirectory(entry)) continue;
    const rules = await frame.rules.child(root, entry.absolute);
    stack.push({
      entries: await readVisibleEntries(root, entry.absolute, rules, entry.depth + 1),
      index: 0,
      rules,
    });
  }
}
