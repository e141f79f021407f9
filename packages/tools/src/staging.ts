// `git add --all` as the drone runs it on a worktree the model wrote: a nested repository (a
// directory with a `.git` of its own) is never recorded as a gitlink — the drone's later git would
// otherwise look into it, and a gitlink's `.git` file may point anywhere on the machine — and a path
// git refuses (`.GIT/config`) leaves only itself out, not the whole commit.
import { SystemError } from "@gadget/protocol";
import { type GitOptions, runGit } from "./git.ts";
import { defuseGitControlFiles } from "./git-control-files.ts";

/** What was not staged, and why. */
export interface LeftOut {
  path: string;
  /** `not_a_file`: a named pipe, socket or device under a git control file's name, removed. */
  reason: "nested_repository" | "refused_path" | "not_a_file";
}

export interface StagingResult {
  /** The index differs from `base`: there is something to commit. */
  changed: boolean;
  leftOut: LeftOut[];
}

const gitlinkMode = "160000";
const noMode = "000000";

/** `error: invalid path 'x'` lines of `git add --ignore-errors`. */
function refusedPaths(stderr: string): string[] {
  return [...stderr.matchAll(/^error: invalid path '(.+)'$/gm)].map((match) => match[1] as string);
}

/** A `.git` component anywhere in a refused path means a repository of its own lives there. */
function describeRefused(file: string): LeftOut {
  const parts = file.split("/");
  const at = parts.findIndex((part) => part.toLowerCase() === ".git");
  return at > 0
    ? { path: parts.slice(0, at).join("/"), reason: "nested_repository" }
    : { path: file, reason: "refused_path" };
}

interface RawEntry {
  oldMode: string;
  newMode: string;
  oldSha: string;
  path: string;
}

/** Parses `git diff-index --raw -z` (`:old new oldsha newsha status\0path\0`). */
function parseRaw(output: string): RawEntry[] {
  const fields = output.split("\0");
  const entries: RawEntry[] = [];
  for (let index = 0; index + 1 < fields.length; index += 2) {
    const [oldMode, newMode, oldSha] = (fields[index] as string).replace(/^:/, "").split(" ");
    entries.push({
      oldMode: oldMode as string,
      newMode: newMode as string,
      oldSha: oldSha as string,
      path: fields[index + 1] as string,
    });
  }
  return entries;
}

/**
 * Stages everything in the worktree (`git add --all`, ignored files excluded) against `base`
 * (a commit or tree: what the stage is compared with), then takes back every gitlink the add
 * recorded or changed: a gitlink `base` had keeps its old commit, a new one is dropped. Paths git
 * refuses are left out and named. Runs in `options.cwd` with `options.env` (GIT_INDEX_FILE for a
 * private index).
 * @example const { changed, leftOut } = await stageAll({ cwd: worktree }, "HEAD");
 */
export async function stageAll(
  options: GitOptions,
  base: string,
  // A named pipe called .gitignore would hold `git add` in open() for good. A caller may start
  // this walk earlier, beside work that reads no file of the worktree.
  defusing: Promise<string[]> = defuseGitControlFiles(options.cwd),
): Promise<StagingResult> {
  const defused = await defusing;
  const added = await runGit(["add", "--all", "--verbose", "--ignore-errors", "--", "."], options);
  const refused = refusedPaths(added.stderr);
  if (added.code !== 0 && refused.length === 0) {
    throw new SystemError(
      "internal",
      `git add failed (exit ${added.code}): ${added.stderr.trim().slice(0, 500)}`,
    );
  }
  const leftOut = new Map<string, LeftOut>();
  for (const file of defused) leftOut.set(file, { path: file, reason: "not_a_file" });
  for (const file of refused) {
    const entry = describeRefused(file);
    leftOut.set(entry.path, entry);
  }
  // --verbose names each path staged ("add 'x'", "remove 'x'"); a gitlink's ends in "/".
  const staged = added.stdout.split("\n").filter((line) => /^(add|remove) '/.test(line));
  const nested = staged.filter((line) => line.endsWith("/'"));
  if (nested.length === 0) return { changed: staged.length > 0, leftOut: sorted(leftOut) };
  // --cached: the index against base only; no working tree, so no nested repository is entered.
  const compared = await runGit(
    ["diff-index", "--cached", "--raw", "-z", "--no-renames", base, "--"],
    options,
  );
  const entries = compared.code === 0 ? parseRaw(compared.stdout) : await everythingStaged(options);
  const gitlinks = entries.filter((entry) => entry.newMode === gitlinkMode);
  if (gitlinks.length > 0) {
    // mode 0 removes a path from the index; any other line puts the base's entry back.
    const lines = gitlinks.map((entry) =>
      entry.oldMode === noMode
        ? `0 ${"0".repeat(entry.oldSha.length)}\t${entry.path}`
        : `${entry.oldMode} ${entry.oldSha}\t${entry.path}`,
    );
    const restored = await runGit(["update-index", "-z", "--index-info"], {
      ...options,
      input: `${lines.join("\0")}\0`,
    });
    if (restored.code !== 0) {
      throw new SystemError(
        "internal",
        `git update-index failed (exit ${restored.code}): ${restored.stderr.trim().slice(0, 500)}`,
      );
    }
    for (const entry of gitlinks) {
      leftOut.set(entry.path, { path: entry.path, reason: "nested_repository" });
    }
  }
  return { changed: staged.length > nested.length, leftOut: sorted(leftOut) };
}

function sorted(leftOut: Map<string, LeftOut>): LeftOut[] {
  return [...leftOut.values()].sort((a, b) => (a.path < b.path ? -1 : 1));
}

/** Without a base (a repository with no commit yet) every index entry is new. */
async function everythingStaged(options: GitOptions): Promise<RawEntry[]> {
  const listed = await runGit(["ls-files", "--stage", "-z"], options);
  return listed.stdout
    .split("\0")
    .filter(Boolean)
    .map((line) => {
      const [meta, file] = line.split("\t") as [string, string];
      const [mode, sha] = meta.split(" ") as [string, string];
      return { oldMode: noMode, newMode: mode, oldSha: "0".repeat(sha.length), path: file };
    });
}

/**
 * One line for the turn: what was left out of the commit or snapshot and why, or null.
 * @example describeLeftOut([{ path: "vendor/v", reason: "nested_repository" }])
 */
export function describeLeftOut(leftOut: readonly LeftOut[]): string | null {
  if (leftOut.length === 0) return null;
  const nested = leftOut.filter((entry) => entry.reason === "nested_repository");
  const refused = leftOut.filter((entry) => entry.reason === "refused_path");
  const removed = leftOut.filter((entry) => entry.reason === "not_a_file");
  const list = (entries: readonly LeftOut[]) => {
    const shown = entries.slice(0, 5).map((entry) => entry.path);
    const more = entries.length - shown.length;
    return `${shown.join(", ")}${more > 0 ? ` and ${more} more` : ""}`;
  };
  const parts: string[] = [];
  if (nested.length > 0) {
    parts.push(
      `${list(nested)} ${nested.length === 1 ? "holds a git repository" : "hold git repositories"} of ${nested.length === 1 ? "its" : "their"} own (a .git), which the drone never commits`,
    );
  }
  if (refused.length > 0) parts.push(`git refuses the path ${list(refused)}`);
  if (removed.length > 0) {
    parts.push(
      `${list(removed)} ${removed.length === 1 ? "was a named pipe, socket or device" : "were named pipes, sockets or devices"} under a name git reads, and ${removed.length === 1 ? "was" : "were"} removed`,
    );
  }
  return `Left out of the commit: ${parts.join("; ")}.`;
}
