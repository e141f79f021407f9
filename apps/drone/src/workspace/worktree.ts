// Each session works in its own git worktree of the project's one clone, on its own branch, so
// sessions of one project run side by side without touching each other's files. The worktree's
// path comes from the session alone: a later turn, or a turn resumed after a restart, finds it.
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, realpath, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import { type CommitAuthor, SystemError, sessionBranch } from "@gadget/protocol";
import { defuseGitControlFiles, gitOrThrow, type LeftOut, stageAll } from "@gadget/tools";
import {
  type DroneGitOptions,
  droneGit,
  firstLine,
  type LocalGit,
  localGit,
  readHardening,
} from "./git.ts";
import { looseHeadCommit } from "./head-commit.ts";

/** Where a session's worktree lives: `<workspaceRoot>/.worktrees/<slug>/<sessionId>`. */
export function worktreeDirectory(workspaceRoot: string, slug: string, sessionId: string): string {
  return path.join(workspaceRoot, ".worktrees", slug, sessionId);
}

/** The lock a turn holds on its session's worktree (two turns of a session wait for each other). */
export function worktreeLockFile(workspaceRoot: string, slug: string, sessionId: string): string {
  return path.join(workspaceRoot, ".locks", slug, `${sessionId}.lock`);
}

/** The lock held while the project's clone is fetched and a worktree is added to it. */
export function cloneLockFile(workspaceRoot: string, slug: string): string {
  return path.join(workspaceRoot, ".locks", `${slug}.lock`);
}

/** What the drone remembers of a session's worktree, beside it (the branch survives a prune). */
export interface WorktreeRecord {
  sessionId: string;
  branch: string;
  /** When a turn last started or ended in it (ISO time); pruning measures idleness from here. */
  lastUsedAt: string;
  /**
   * The last turn's commit failed: its changes sit uncommitted, and `before` is the snapshot tree
   * of the worktree when it started, so a revert can restore it. Any later turn clears it.
   */
  uncommitted?: { turnId: string; before: string };
}

function recordFile(directory: string): string {
  return `${directory}.json`;
}

/** The record of the worktree at `directory`, or null when there is none. */
export async function readWorktreeRecord(directory: string): Promise<WorktreeRecord | null> {
  try {
    return JSON.parse(await readFile(recordFile(directory), "utf8")) as WorktreeRecord;
  } catch {
    return null;
  }
}

/** Marks the worktree used now (a turn starts or ends in it). */
export async function touchWorktree(directory: string, record: Omit<WorktreeRecord, "lastUsedAt">) {
  const file = recordFile(directory);
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, JSON.stringify({ ...record, lastUsedAt: new Date().toISOString() }));
  await rename(temporary, file);
}

export interface SessionWorktreeOptions extends DroneGitOptions {
  workspaceRoot: string;
  slug: string;
  /** The project's clone (prepareWorkspace's directory). */
  clone: string;
  session: { _id: string; name: string };
  branchPrefix: string;
  /** The default branch a new session branch starts from; null: the remote's HEAD. */
  defaultBranch: string | null;
  /** A forked session's new branch starts at this commit, when the clone has it. */
  startFrom?: string;
}

export interface SessionWorktree {
  directory: string;
  branch: string;
  /** `created`: a new branch from the default branch; `restored`: the session's branch checked out again; `reused`: as the last turn left it. */
  outcome: "created" | "restored" | "reused";
  message: string;
}

/** The config key naming the session a branch belongs to, so a name clash is never taken for it. */
const ownerKey = (branch: string) => `branch.${branch}.gadgetSession`;

/**
 * The session's worktree, made when missing: its branch checked out again when it exists (an
 * earlier worktree was pruned), else a new branch from the freshly fetched default branch.
 * Call with the clone's lock held (it adds to the clone's `.git`).
 * @example const { directory, branch } = await prepareSessionWorktree({ workspaceRoot, slug, clone, session, branchPrefix: "gadget/", defaultBranch: "main" });
 */
export async function prepareSessionWorktree(
  options: SessionWorktreeOptions,
): Promise<SessionWorktree> {
  const worktree = await findOrAddWorktree(options);
  // Marks it used now, and remembers its branch should the worktree be pruned.
  await touchWorktree(worktree.directory, {
    sessionId: options.session._id,
    branch: worktree.branch,
  });
  return worktree;
}

async function findOrAddWorktree(options: SessionWorktreeOptions): Promise<SessionWorktree> {
  const directory = worktreeDirectory(options.workspaceRoot, options.slug, options.session._id);
  const record = await readWorktreeRecord(directory);
  if (existsSync(path.join(directory, ".git")) && !(await belongsTo(directory, options.clone))) {
    // Its clone was deleted (and made again): keep the files where a person can find them.
    const aside = path.join(
      options.workspaceRoot,
      ".worktrees",
      ".orphaned",
      `${options.slug}-${options.session._id}-${Date.now()}`,
    );
    await mkdir(path.dirname(aside), { recursive: true });
    await rename(directory, aside);
  }
  if (existsSync(path.join(directory, ".git"))) {
    const branch =
      record?.branch ??
      (await (await droneGit(directory, options, true)).revparse(["--abbrev-ref", "HEAD"])).trim();
    return { directory, branch, outcome: "reused", message: `Continuing on branch ${branch}` };
  }
  // Spawned directly: `worktree prune`, the owner's `config` and a `for-each-ref` that finds no
  // branch print nothing, after which simple-git waits 50 ms more (localGit).
  const clone = await localGit(options.clone, options);
  try {
    // A worktree directory deleted by hand leaves git's record of it behind; forget it first.
    if (await registeredBefore(options.clone, options.session._id)) {
      await clone.raw(["worktree", "prune"]);
    }
    await mkdir(path.dirname(directory), { recursive: true });
    // A fork's start is looked up beside the branch's name (neither waits for the other).
    const [chosen, forkStart] = await Promise.all([
      record && (await branchExists(clone, record.branch))
        ? { branch: record.branch, exists: true, pushed: false }
        : chooseBranch(clone, options),
      options.startFrom ? forkPoint(clone, options.startFrom) : null,
    ]);
    const owned = chosen.exists ? chosen.branch : null;
    if (owned) {
      await clone.raw(["worktree", "add", directory, owned]);
      return {
        directory,
        branch: owned,
        outcome: "restored",
        message: `Continuing on branch ${owned}`,
      };
    }
    const branch = chosen.branch;
    if (chosen.pushed) {
      // Another drone ran the session's earlier turns and pushed its branch: go on from there.
      const pushed = `refs/remotes/origin/${branch}`;
      await clone.raw(["worktree", "add", "--no-track", "-b", branch, directory, pushed]);
      await clone.raw(["config", ownerKey(branch), options.session._id]);
      return {
        directory,
        branch,
        outcome: "restored",
        message: `Continuing on branch ${branch} as pushed to origin`,
      };
    }
    const base = forkStart ?? (await startPoint(clone, options.defaultBranch));
    // --no-track: the session's branch is its own, not a follower of the default branch. The
    // branch's owner is written meanwhile (the config is replaced whole, so `worktree add` reads
    // it before or after); a branch that was not made has no owner to ask for.
    await Promise.all([
      clone.raw(["worktree", "add", "--no-track", "-b", branch, directory, base.ref]),
      clone.raw(["config", ownerKey(branch), options.session._id]),
    ]);
    // A fork whose commit only its source's drone holds (never delivered) cannot start there:
    // say so rather than let the branch seem to hold the source's work.
    const missing =
      options.startFrom && !forkStart
        ? `: the fork's commit ${options.startFrom.slice(0, 7)} is not in this drone's clone nor on the project's remote`
        : "";
    return {
      directory,
      branch,
      outcome: "created",
      message: `New branch ${branch} from ${base.name}${missing}`,
    };
  } catch (error) {
    throw new SystemError(
      "worktree_failed",
      `Could not prepare the session's worktree: ${firstLine(error)}`,
      { cause: error },
    );
  }
}

type Repository = LocalGit;

/** Whether git's records of the clone's worktrees hold one for this session (its directory maybe gone). */
async function registeredBefore(clone: string, sessionId: string): Promise<boolean> {
  const names = await readdir(path.join(clone, ".git", "worktrees")).catch(() => [] as string[]);
  return names.some((name) => name.startsWith(sessionId));
}

/** Whether the worktree's `.git` file points into this clone's git directory, which still has it. */
async function belongsTo(directory: string, clone: string): Promise<boolean> {
  const pointer = /^gitdir:\s*(.+)$/m.exec(
    await readFile(path.join(directory, ".git"), "utf8").catch(() => ""),
  )?.[1];
  if (!pointer) return false;
  const gitDirectory = await realpath(path.resolve(directory, pointer.trim())).catch(() => null);
  const worktrees = await realpath(path.join(clone, ".git", "worktrees")).catch(() => null);
  return gitDirectory !== null && worktrees !== null && path.dirname(gitDirectory) === worktrees;
}

async function branchExists(repository: Repository, branch: string): Promise<boolean> {
  return refExists(repository, `refs/heads/${branch}`);
}

async function refExists(repository: Repository, ref: string): Promise<boolean> {
  return repository
    .raw(["rev-parse", "--verify", "--quiet", ref])
    .then((output) => output.trim() !== "")
    .catch(() => false);
}

async function branchOwner(repository: Repository, branch: string): Promise<string | null> {
  const owner = await repository.raw(["config", "--get", ownerKey(branch)]).catch(() => "");
  return owner.trim() || null;
}

/**
 * The session's branch: the one an earlier worktree of it made (its record lost), else a free
 * name — the whole id instead of 6 characters when another branch has the short one.
 */
async function chooseBranch(
  repository: Repository,
  options: SessionWorktreeOptions,
): Promise<{ branch: string; exists: boolean; pushed: boolean }> {
  const names = [6, options.session._id.length].map((idLength) =>
    sessionBranch(options.branchPrefix, options.session, idLength),
  );
  // One listing for both names, local and as pushed to origin (patterns match whole path
  // components, so compare exactly).
  const listing = await repository.raw([
    "for-each-ref",
    "--format=%(refname)",
    ...names.flatMap((name) => [`refs/heads/${name}`, `refs/remotes/origin/${name}`]),
  ]);
  const refs = new Set(listing.split("\n").map((line) => line.trim()));
  const existing = new Set(names.filter((name) => refs.has(`refs/heads/${name}`)));
  for (const name of names) {
    if (existing.has(name) && (await branchOwner(repository, name)) === options.session._id) {
      return { branch: name, exists: true, pushed: false };
    }
  }
  const branch = names.find((name) => !existing.has(name)) ?? (names[1] as string);
  return { branch, exists: false, pushed: refs.has(`refs/remotes/origin/${branch}`) };
}

/** A forked session's start: its source's commit, when the clone has it (fetched with the rest). */
async function forkPoint(
  repository: Repository,
  commit: string,
): Promise<{ ref: string; name: string } | null> {
  const found = await repository
    .raw(["rev-parse", "--verify", "--quiet", `${commit}^{commit}`])
    .catch(() => "");
  return found.trim() ? { ref: found.trim(), name: `commit ${commit.slice(0, 7)}` } : null;
}

/** Where a new session branch starts: the fetched default branch, else the clone's HEAD. */
async function startPoint(
  repository: Repository,
  defaultBranch: string | null,
): Promise<{ ref: string; name: string }> {
  const candidates = defaultBranch
    ? [`refs/remotes/origin/${defaultBranch}`, `refs/heads/${defaultBranch}`]
    : ["refs/remotes/origin/HEAD"];
  for (const ref of candidates) {
    const found = await repository
      .raw(["rev-parse", "--verify", "--quiet", `${ref}^{commit}`])
      .catch(() => "");
    if (found.trim()) return { ref: found.trim(), name: defaultBranch ?? "origin/HEAD" };
  }
  return { ref: "HEAD", name: "the clone's HEAD" };
}

/** Who commits a turn's work when the user's git config names nobody. */
const fallbackIdentity = ["user.name=Gadget Code", "user.email=gadget-drone@localhost"];

/** `-c` options naming the drone as committer unless the user's git config names someone. */
export function commitIdentity(repository: { configuredKeys: ReadonlySet<string> }): string[] {
  return repository.configuredKeys.has("user.email")
    ? []
    : fallbackIdentity.flatMap((entry) => ["-c", entry]);
}

/**
 * Commits everything the turn changed in the worktree onto the session's branch (ignored files
 * stay out), so the branch keeps the session's work and an idle worktree can be removed without
 * losing any. Nested repositories and paths git refuses are never committed; `onLeftOut` hears of
 * them. Returns the new commit, or null when nothing changed.
 */
export async function commitSessionWork(
  directory: string,
  message: string,
  options: DroneGitOptions & {
    author?: CommitAuthor;
    onLeftOut?: (leftOut: LeftOut[]) => void;
  } = {},
): Promise<string | null> {
  // The walk for named pipes reads no ref: it runs while git's config is read.
  const defusing = defuseGitControlFiles(directory);
  const hardened = await (options.hardened ?? readHardening(directory)).catch(
    async (error: unknown) => {
      await defusing;
      throw error;
    },
  );
  // Spawned directly, not through simple-git, which waits 50 ms more after a git that printed
  // nothing (`commit --quiet`).
  const git = { cwd: directory, hardened, ...(options.signal ? { signal: options.signal } : {}) };
  // Against HEAD: what a failed commit left staged goes in with the next turn that commits (no
  // commit yet: every staged entry is new).
  const staged = await stageAll(git, "HEAD", defusing);
  if (staged.leftOut.length > 0) options.onLeftOut?.(staged.leftOut);
  if (!staged.changed) return null;
  // The project's commit author names the author; the machine's identity stays the committer.
  const author = options.author
    ? [`--author=${options.author.name} <${options.author.email}>`]
    : [];
  await gitOrThrow(
    [
      ...commitIdentity({ configuredKeys: hardened.keys }),
      // The clone's housekeeping (`git maintenance run --auto`, a second git process) runs after
      // the fetch that starts every turn, not after every commit as well.
      "-c",
      "maintenance.auto=false",
      "commit",
      "--no-verify",
      "--quiet",
      ...author,
      "-m",
      message,
    ],
    git,
  );
  return (
    (await looseHeadCommit(directory)) ?? (await gitOrThrow(["rev-parse", "HEAD"], git)).trim()
  );
}
