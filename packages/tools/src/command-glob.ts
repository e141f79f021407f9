// Expands an unquoted glob argument (`src/*.ts`) the way bash does by default: `*` and `?` stay in one
// directory, dot files need a leading dot, and a pattern that matches nothing is passed as written.
import { lstat, readdir } from "node:fs/promises";
import path from "node:path";
import picomatch from "picomatch";

function unescapeSegment(segment: string): string {
  return segment.replace(/\\(.)/g, "$1");
}

/**
 * Paths (relative to `cwd`, in the pattern's own form) matching `pattern`, sorted; empty when
 * nothing matches or the pattern is absolute or climbs with `..` (those stay literal and are
 * checked as paths).
 */
export async function expandGlob(pattern: string, cwd: string, limit = 10_000): Promise<string[]> {
  if (path.isAbsolute(pattern)) return [];
  const segments = pattern.split("/").filter((segment) => segment !== "" && segment !== ".");
  if (segments.some((segment) => unescapeSegment(segment) === "..")) return [];
  let current = [""];
  let expanded = false;
  for (const segment of segments) {
    if (!picomatch.scan(segment).isGlob) {
      current = current.map((prefix) =>
        prefix ? `${prefix}/${unescapeSegment(segment)}` : unescapeSegment(segment),
      );
      continue;
    }
    expanded = true;
    // bash without globstar treats ** like *.
    const isMatch = picomatch(segment.replace(/\*\*+/g, "*"), { dot: segment.startsWith(".") });
    const next: string[] = [];
    for (const prefix of current) {
      const names = await readdir(path.join(cwd, prefix)).catch(() => [] as string[]);
      for (const name of names.sort()) {
        if (isMatch(name)) next.push(prefix ? `${prefix}/${name}` : name);
        if (next.length > limit) break;
      }
    }
    current = next;
    if (current.length === 0) return [];
  }
  if (!expanded) return [];
  const existing: string[] = [];
  for (const candidate of current) {
    const exists = await lstat(path.join(cwd, candidate)).then(
      () => true,
      () => false,
    );
    if (exists) existing.push(candidate);
  }
  const lead = pattern.startsWith("./") ? "./" : "";
  return existing.slice(0, limit).map((candidate) => lead + candidate);
}
