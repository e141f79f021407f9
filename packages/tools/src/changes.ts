// Changes since a point: a snapshot is a git tree object written through a temporary index, so the
// user's index, branches and stash list are never touched; a workspace that is not a git repository
// gets a private object store outside it (never `git init` in the user's directory).
import { createHash } from "node:crypto";
import {
  copyFile,
  mkdir,
  mkdtemp,
  realpath,
  rename,
  rm,
  stat,
  utimes,
  writeFile,
} from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { gitOrThrow, runGit } from "./git.ts";
import { type LeftOut, type StagingResult, stageAll } from "./staging.ts";
import { isInside } from "./workspace-path.ts";

/** An opaque, JSON-serialisable point in a workspace's history. */
export interface WorkspaceSnapshot {
  version: 1;
  /** The git tree object holding the workspace's files at that point. */
  tree: string;
  /** Where the tree lives: the workspace's own repository, or a private store (path given). */
  store: "repository" | "private";
  /** Git directory of the private store; absent for the repository store. */
  gitDir?: string;
}

export type ChangeStatus = "added" | "modified" | "deleted";

export interface FileChange {
  /** Path relative to the workspace root. */
  path: string;
  status: ChangeStatus;
}

export interface WorkspaceChanges {
  /** Changed files sorted by path; a rename is a deletion plus an addition. */
  files: FileChange[];
  /** Unified diff (renames detected), cut at maxDiffBytes. */
  diff: string;
  /** The diff was cut. */
  truncated: boolean;
  /** A snapshot of the current state, to measure the next changes from. */
  current: WorkspaceSnapshot;
  /** What the snapshot left out (nested repositories, paths git refuses, pipes under git's names). */
  leftOut: LeftOut[];
}

export interface SnapshotOptions {
  /**
   * Where private stores for non-git workspaces live (one per workspace path).
   * Default: `<os tmpdir>/gadget-code-snapshots`.
   */
  storeDirectory?: string;
  signal?: AbortSignal;
}

export interface ChangesOptions extends SnapshotOptions {
  /** Largest diff returned. Default: 262,144 bytes. */
  maxDiffBytes?: number;
}

interface Store {
  kind: "repository" | "private";
  /** Environment that points git at the store (GIT_DIR/GIT_WORK_TREE for a private one). */
  env: Record<string, string>;
  gitDir: string;
  /** Index whose stat cache makes `git add -A` rehash only changed files. */
  seedIndex: string;
  /** A private store keeps its index up to date between snapshots. */
  persistIndex: boolean;
}

async function repositoryGitDir(root: string, signal?: AbortSignal): Promise<string | undefined> {
  const result = await runGit(["rev-parse", "--absolute-git-dir"], {
    cwd: root,
    ...(signal ? { signal } : {}),
  });
  if (result.code !== 0) return undefined;
  const gitDir = result.stdout.trim();
  // A workspace inside a .git directory is not a working tree.
  if (!gitDir || isInside(gitDir, root)) return undefined;
  return gitDir;
}

async function privateStore(
  root: string,
  options: SnapshotOptions,
  gitDir?: string,
): Promise<Store> {
  const base = options.storeDirectory ?? path.join(os.tmpdir(), "gadget-code-snapshots");
  const directory =
    gitDir ?? path.join(base, createHash("sha256").update(root).digest("hex").slice(0, 24));
  await mkdir(directory, { recursive: true });
  await gitOrThrow(["init", "--bare", "--quiet", directory], { cwd: directory });
  await mkdir(path.join(directory, "info"), { recursive: true });
  await writeFile(path.join(directory, "info", "exclude"), "node_modules/\n.git/\n");
  return {
    kind: "private",
    env: { GIT_DIR: directory, GIT_WORK_TREE: root },
    gitDir: directory,
    seedIndex: path.join(directory, "index"),
    persistIndex: true,
  };
}

async function openStore(
  root: string,
  options: SnapshotOptions,
  snapshot?: WorkspaceSnapshot,
): Promise<Store> {
  if (snapshot?.store === "private") return privateStore(root, options, snapshot.gitDir);
  const gitDir = await repositoryGitDir(root, options.signal);
  if (!gitDir) {
    if (snapshot?.store === "repository") {
      throw new Error(
        "The snapshot was taken in a git repository, but the workspace is no longer one.",
      );
    }
    return privateStore(root, options);
  }
  return {
    kind: "repository",
    env: {},
    gitDir,
    seedIndex: path.join(gitDir, "index"),
    persistIndex: false,
  };
}

/** Writes the workspace's current files (ignored ones excluded) as a tree in the store. */
/**
 * Git trusts an index entry's stat data only when the file's mtime is older than the index file
 * itself; entries at least as new ("racily clean") are compared by content. A copy gets a fresh
 * mtime and would make a same-size edit in the same second as the original write look unchanged
 * (git compares whole seconds), so the copy gets the original's mtime, two seconds earlier.
 */
async function keepRacyEntriesRacy(original: string, copy: string): Promise<void> {
  const info = await stat(original);
  const backdated = new Date(info.mtimeMs - 2000);
  await utimes(copy, backdated, backdated);
}

async function writeTree(
  root: string,
  store: Store,
  signal?: AbortSignal,
): Promise<{ tree: string; leftOut: LeftOut[] }> {
  const temporary = await mkdtemp(path.join(os.tmpdir(), "gadget-index-"));
  const index = path.join(temporary, "index");
  try {
    // A copy of an index carries its stat cache, so only changed files are hashed again.
    const seeded = await copyFile(store.seedIndex, index).then(
      () => true,
      () => false,
    );
    if (seeded) await keepRacyEntriesRacy(store.seedIndex, index);
    const env = { ...store.env, GIT_INDEX_FILE: index };
    // Nested repositories and paths git refuses stay out of snapshots as they stay out of commits.
    const add = () => stageAll({ cwd: root, env, ...(signal ? { signal } : {}) }, "HEAD");
    let staged: StagingResult;
    try {
      staged = await add();
    } catch (error) {
      if (!seeded) throw error;
      // An index git cannot reuse (e.g. split index): start from an empty one.
      await rm(index, { force: true });
      staged = await add();
    }
    const tree = (
      await gitOrThrow(["write-tree"], { cwd: root, env, ...(signal ? { signal } : {}) })
    ).trim();
    if (store.persistIndex) await rename(index, store.seedIndex).catch(() => undefined);
    return { tree, leftOut: staged.leftOut };
  } finally {
    await rm(temporary, { recursive: true, force: true });
  }
}

/**
 * Records the workspace's files (untracked included, ignored excluded) without touching the
 * user's index, branches or stash list.
 * @example
 * const before = await snapshotWorkspace(workspace);
 * // … the turn runs …
 * const { files, diff } = await changesSince(workspace, before);
 */
export async function snapshotWorkspace(
  workspace: string,
  options: SnapshotOptions = {},
): Promise<WorkspaceSnapshot> {
  const root = await realpath(workspace);
  const store = await openStore(root, options);
  const { tree } = await writeTree(root, store, options.signal);
  return store.kind === "private"
    ? { version: 1, tree, store: "private", gitDir: store.gitDir }
    : { version: 1, tree, store: "repository" };
}

function parseNameStatus(output: string): FileChange[] {
  const fields = output.split("\0").filter((field) => field.length > 0);
  const files: FileChange[] = [];
  for (let index = 0; index + 1 < fields.length; index += 2) {
    const letter = (fields[index] as string).charAt(0);
    const file = fields[index + 1] as string;
    const status: ChangeStatus = letter === "A" ? "added" : letter === "D" ? "deleted" : "modified";
    files.push({ path: file, status });
  }
  return files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/**
 * Added, modified and deleted files and a unified diff (capped) between a snapshot and now.
 */
export async function changesSince(
  workspace: string,
  snapshot: WorkspaceSnapshot,
  options: ChangesOptions = {},
): Promise<WorkspaceChanges> {
  const root = await realpath(workspace);
  const store = await openStore(root, options, snapshot);
  const { tree, leftOut } = await writeTree(root, store, options.signal);
  const current: WorkspaceSnapshot =
    store.kind === "private"
      ? { version: 1, tree, store: "private", gitDir: store.gitDir }
      : { version: 1, tree, store: "repository" };
  const base = { cwd: root, env: store.env, ...(options.signal ? { signal: options.signal } : {}) };
  if (tree === snapshot.tree) return { files: [], diff: "", truncated: false, current, leftOut };
  const [names, diff] = await Promise.all([
    gitOrThrow(
      ["diff-tree", "-r", "-z", "--no-renames", "--name-status", "--relative", snapshot.tree, tree],
      base,
    ),
    runGit(
      [
        "diff-tree",
        "-r",
        "-p",
        "-M",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--relative",
        snapshot.tree,
        tree,
      ],
      { ...base, maxOutputBytes: options.maxDiffBytes ?? 256 * 1024 },
    ),
  ]);
  return {
    files: parseNameStatus(names),
    diff: diff.stdout,
    truncated: diff.truncated,
    current,
    leftOut,
  };
}

/**
 * The changed files an event can carry: the first `maxFiles` (by path) whose paths fit in
 * `maxBytes`, and how many there were in all. 100,000 files under long paths would otherwise make
 * one event larger than a socket message.
 * @example const { files, total } = cappedChanges(changes.files, 1000, 256 * 1024);
 */
export function cappedChanges(
  files: readonly FileChange[],
  maxFiles: number,
  maxBytes: number,
): { files: FileChange[]; total: number } {
  const kept: FileChange[] = [];
  let bytes = 0;
  for (const file of files) {
    bytes += Buffer.byteLength(file.path) + 16;
    if (kept.length >= maxFiles || bytes > maxBytes) break;
    kept.push(file);
  }
  return { files: kept, total: files.length };
}
