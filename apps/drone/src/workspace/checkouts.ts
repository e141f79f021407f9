// The projects this drone holds a checkout of, which the server prefers it for.
import { existsSync } from "node:fs";
import { readdir } from "node:fs/promises";
import path from "node:path";

/** Project slugs with a checkout (a `.git`) directly under `root`, sorted. */
export async function checkoutSlugs(root: string): Promise<string[]> {
  const names = await readdir(root).catch(() => [] as string[]);
  return names
    .filter((name) => !name.startsWith(".") && existsSync(path.join(root, name, ".git")))
    .sort();
}
