// Locates the repository root (the folder holding pnpm-workspace.yaml).
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** Walks up from `start` (default: this file) to the folder holding pnpm-workspace.yaml. */
export function findRepoRoot(start = path.dirname(fileURLToPath(import.meta.url))): string {
  let directory = start;
  while (!existsSync(path.join(directory, "pnpm-workspace.yaml"))) {
    const parent = path.dirname(directory);
    if (parent === directory) throw new Error(`no pnpm-workspace.yaml above ${start}`);
    directory = parent;
  }
  return directory;
}
