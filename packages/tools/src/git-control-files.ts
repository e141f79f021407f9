// Git opens `.gitignore`, `.gitattributes`, `.gitmodules` and `.mailmap` wherever it walks a
// worktree; a named pipe under one of those names (the model's `mkfifo .gitignore`) would block the
// drone's own git in open() for good. The drone removes such non-files before its git walks what a
// turn wrote. Found with find(1): one fast pass in C over the tree, `.git` directories skipped.
import { execFile } from "node:child_process";
import { rm } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** The files git reads in every directory of a worktree it walks. */
export const gitControlFileNames: readonly string[] = [
  ".gitignore",
  ".gitattributes",
  ".gitmodules",
  ".mailmap",
];

/**
 * Removes every named pipe, socket or device under `root` named like a git control file (git does
 * not follow a symbolic link there, and reads a regular file without waiting).
 * Returns their paths relative to `root`.
 * @example const removed = await defuseGitControlFiles(worktree); // [".gitignore"]
 */
export async function defuseGitControlFiles(root: string): Promise<string[]> {
  const names = gitControlFileNames.flatMap((name, index) => [
    ...(index > 0 ? ["-o"] : []),
    "-name",
    name,
  ]);
  const { stdout } = await run(
    "find",
    [
      ".",
      "-name",
      ".git",
      "-prune",
      "-o",
      "(",
      ...names,
      ")",
      "(",
      ...["-type", "p", "-o", "-type", "s", "-o", "-type", "b", "-o", "-type", "c"],
      ")",
      "-print0",
    ],
    { cwd: root, maxBuffer: 16 * 1024 * 1024 },
  ).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? "" }));
  const found = stdout
    .split("\0")
    .filter(Boolean)
    .map((entry) => entry.replace(/^\.\//, ""));
  for (const entry of found) await rm(path.join(root, entry), { force: true });
  return found;
}
