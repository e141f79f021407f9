// Finds the git directories a worktree uses, so the sandbox can show them read-only: the agent may
// run `git status` or `git log`, but only the drone writes history, hooks or config.
import { lstat, readFile, realpath } from "node:fs/promises";
import path from "node:path";

/**
 * The paths to bind read-only for `workspace`'s git data: its `.git` (directory, file or link),
 * and for a linked worktree or submodule the directories its `.git` file points to.
 * @example await gitPaths("/work/project") // ["/work/project/.git"]
 */
export async function gitPaths(workspace: string): Promise<string[]> {
  const dotGit = path.join(workspace, ".git");
  const stats = await lstat(dotGit).catch(() => null);
  if (!stats) return [];
  if (stats.isDirectory()) return [dotGit];
  if (stats.isSymbolicLink()) {
    const target = await realpath(dotGit).catch(() => null);
    return target ? [target] : [];
  }
  if (!stats.isFile()) return [dotGit];
  // "gitdir: <path>" (git worktree, submodule); its commondir names the shared repository.
  const text = await readFile(dotGit, "utf8").catch(() => "");
  const pointer = /^gitdir:\s*(.+)$/m.exec(text)?.[1]?.trim();
  const result = [dotGit];
  if (!pointer) return result;
  const gitDirectory = await realpath(path.resolve(workspace, pointer)).catch(() => null);
  if (!gitDirectory) return result;
  result.push(gitDirectory);
  const common = (
    await readFile(path.join(gitDirectory, "commondir"), "utf8").catch(() => "")
  ).trim();
  if (common) {
    const commonDirectory = await realpath(path.resolve(gitDirectory, common)).catch(() => null);
    if (commonDirectory) result.push(commonDirectory);
  }
  return result;
}
