// The commit a worktree's HEAD names, read from its git files right after the drone's own commit:
// one git process (`rev-parse HEAD`) fewer at the end of every turn. The files are the drone's —
// the sandbox shows `.git`, its gitdir and the shared repository read-only — and anything this
// reading does not know (a detached or packed ref, another ref store) is asked of git instead.
import { readFile } from "node:fs/promises";
import path from "node:path";

const objectId = /^[0-9a-f]{40}([0-9a-f]{24})?$/;
/** A branch name as git writes it in HEAD, with no way out of the refs directory. */
const branchRef = /^refs\/heads\/(?!.*(^|\/)\.\.?(\/|$))[^\0\\]+$/;

async function readText(file: string): Promise<string | null> {
  return (await readFile(file, "utf8").catch(() => null))?.trim() ?? null;
}

/**
 * The commit HEAD points to in `worktree` when it is a loose branch ref (what `git commit` just
 * wrote), else null: ask git.
 * @example const commit = (await looseHeadCommit(worktree)) ?? (await revParseHead());
 */
export async function looseHeadCommit(worktree: string): Promise<string | null> {
  const dotGit = path.join(worktree, ".git");
  // A linked worktree's `.git` is a file naming its git directory (unreadable as a file: a clone's
  // `.git` directory).
  const pointer = await readText(dotGit);
  const named = pointer === null ? null : /^gitdir:\s*(.+)$/.exec(pointer)?.[1];
  if (pointer !== null && !named) return null;
  const gitDirectory = named ? path.resolve(worktree, named) : dotGit;
  const head = await readText(path.join(gitDirectory, "HEAD"));
  if (!head) return null;
  if (objectId.test(head)) return head;
  const ref = /^ref: (.+)$/.exec(head)?.[1];
  if (!ref || !branchRef.test(ref)) return null;
  // Branches live in the shared repository (`commondir`), not in the worktree's own directory.
  const common = await readText(path.join(gitDirectory, "commondir"));
  const commonDirectory = common ? path.resolve(gitDirectory, common) : gitDirectory;
  const commit = await readText(path.join(commonDirectory, ref));
  return commit && objectId.test(commit) ? commit : null;
}
