// "Did you mean": near names for a path that does not exist, so the model can correct itself.
import { stat } from "node:fs/promises";
import path from "node:path";
import { IgnoreRules, readVisibleEntries, walk } from "./walk.ts";

/** Edit distance where swapping two neighbouring characters counts as one edit (typos like "scr"). */
function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 3) return 99;
  const rows: number[][] = [Array.from({ length: b.length + 1 }, (_, index) => index)];
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const above = rows[i - 1] as number[];
      let best = Math.min(
        (above[j] as number) + 1,
        (row[j - 1] as number) + 1,
        (above[j - 1] as number) + cost,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, ((rows[i - 2] as number[])[j - 2] as number) + 1);
      }
      row[j] = best;
    }
    rows.push(row);
  }
  return (rows[a.length] as number[])[b.length] as number;
}

function stem(name: string): string {
  const dot = name.lastIndexOf(".");
  return (dot > 0 ? name.slice(0, dot) : name).toLowerCase();
}

function isNear(wanted: string, candidate: string): boolean {
  if (wanted.toLowerCase() === candidate.toLowerCase()) return true;
  if (stem(wanted) === stem(candidate) && stem(wanted).length > 0) return true;
  const distance = editDistance(wanted.toLowerCase(), candidate.toLowerCase());
  return distance <= Math.max(1, Math.floor(wanted.length / 5));
}

/**
 * Up to `limit` existing paths close to a missing one: near names in its deepest existing
 * directory, then files with the same name elsewhere in the workspace (bounded walk).
 */
export async function suggestPaths(
  root: string,
  missingRelative: string,
  limit = 5,
  signal?: AbortSignal,
): Promise<string[]> {
  const parts = missingRelative.split("/").filter((part) => part !== "" && part !== ".");
  const wanted = parts[parts.length - 1];
  if (!wanted) return [];
  const suggestions = new Set<string>();

  let existing = root;
  let index = 0;
  for (; index < parts.length - 1; index++) {
    const next = path.join(existing, parts[index] as string);
    const isDirectory = await stat(next).then(
      (stats) => stats.isDirectory(),
      () => false,
    );
    if (!isDirectory) break;
    existing = next;
  }
  const missingName = parts[index] as string;
  const rules = await IgnoreRules.forDirectory(root, existing);
  for (const entry of await readVisibleEntries(root, existing, rules, 1)) {
    if (isNear(missingName, entry.name)) {
      const rest = parts.slice(index + 1);
      suggestions.add([entry.relative, ...rest].join("/"));
    }
  }

  let seen = 0;
  for await (const entry of walk(root, root, signal ? { signal } : {})) {
    if (suggestions.size >= limit || ++seen > 20_000) break;
    if (entry.type === "file" && isNear(wanted, entry.name) && stem(wanted) === stem(entry.name)) {
      suggestions.add(entry.relative);
    }
  }
  return [...suggestions].slice(0, limit);
}

/** " Did you mean: a, b?" or "" when there is nothing close. */
export async function didYouMean(root: string, missingRelative: string): Promise<string> {
  const suggestions = await suggestPaths(root, missingRelative).catch(() => []);
  return suggestions.length > 0 ? ` Did you mean: ${suggestions.join(", ")}?` : "";
}
