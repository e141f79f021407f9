// The programs a hook names under `.gadget/`, as committed at the commit the turn started on: the
// drone copies that directory out of git (outside the worktree, shown read-only in the sandbox) and
// a hook's `.gadget/…` arguments point there, so the agent editing `.gadget/guard.mjs` mid-turn
// changes nothing this turn, as editing `.gadget/hooks.json` does not.
import { chmod, mkdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { droneGit } from "../workspace/git.ts";

/** What is copied at most: files, and bytes of one file and of all. */
const maxFiles = 200;
const maxFileBytes = 1024 * 1024;
const maxTotalBytes = 8 * 1024 * 1024;

/**
 * Copies `.gadget/` of `commit` (regular files only, no symbolic links) into `target`; returns
 * the copy's `.gadget` directory, or null when the commit has none or it is too large to copy.
 */
export async function copyCommittedHooksDirectory(
  directory: string,
  commit: string,
  target: string,
  signal: AbortSignal,
): Promise<string | null> {
  const git = await droneGit(directory, { signal }, true);
  // `<mode> <type> <sha> <size>\t<path>` per file, NUL-terminated.
  const listing = await git.raw(["ls-tree", "-r", "-l", "-z", commit, "--", ".gadget/"]);
  const files = listing
    .split("\0")
    .filter(Boolean)
    .map((line) => {
      const [meta = "", name = ""] = line.split("\t");
      const [mode, type, sha, size] = meta.split(/\s+/);
      return { mode, type, sha, size: Number(size), name };
    })
    .filter((file) => file.type === "blob" && (file.mode === "100644" || file.mode === "100755"));
  const total = files.reduce((sum, file) => sum + file.size, 0);
  if (
    files.length === 0 ||
    files.length > maxFiles ||
    total > maxTotalBytes ||
    files.some((file) => file.size > maxFileBytes)
  )
    return null;
  await rm(target, { recursive: true, force: true });
  for (const file of files) {
    const destination = path.join(target, file.name);
    // ls-tree names stay under `.gadget/`; a name that would not is skipped, never followed.
    if (!destination.startsWith(path.join(target, ".gadget") + path.sep)) continue;
    await mkdir(path.dirname(destination), { recursive: true });
    const content = await git.binaryCatFile(["blob", file.sha as string]);
    await writeFile(destination, content);
    await chmod(destination, file.mode === "100755" ? 0o555 : 0o444);
  }
  return path.join(target, ".gadget");
}

/**
 * A hook's argv with its `.gadget/…` arguments pointing into the committed copy.
 * @example fromCommittedCopy(["node", ".gadget/guard.mjs"], "/w/.hooks/t1/.gadget") // ["node", "/w/.hooks/t1/.gadget/guard.mjs"]
 */
export function fromCommittedCopy(argv: readonly string[], copy: string | null): string[] {
  if (!copy) return [...argv];
  return argv.map((argument) => {
    const relative = argument.startsWith("./") ? argument.slice(2) : argument;
    if (!relative.startsWith(".gadget/")) return argument;
    const inside = path.join(copy, relative.slice(".gadget/".length));
    return inside.startsWith(copy + path.sep) ? inside : argument;
  });
}
