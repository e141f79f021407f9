// Session worktrees nobody used for the retention period are removed (`git worktree remove`, then
// `git worktree prune`); their branches stay, so the session's next turn checks its work out again.
import { existsSync } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import type { EngineLogger } from "@gadget/agent";
import { defuseGitControlFiles } from "@gadget/tools";
import { firstLine, localGit } from "./git.ts";
import { tryLock } from "./lock.ts";
import { projectDirectory } from "./prepare.ts";
import {
  cloneLockFile,
  readWorktreeRecord,
  worktreeDirectory,
  worktreeLockFile,
} from "./worktree.ts";

export interface PruneOptions {
  workspaceRoot: string;
  /** How long a worktree may sit unused before it is removed. */
  retentionMs: number;
  /** The time to measure from; default now. */
  now?: Date;
  logger?: EngineLogger;
}

export interface PruneResult {
  /** Worktree directories removed. */
  removed: string[];
  /** Idle worktrees kept, with why (a turn holds it, uncommitted files). */
  kept: Array<{ directory: string; reason: string }>;
}

/**
 * Removes every session worktree idle for longer than the retention period; one a turn holds
 * (its lock is taken) or with uncommitted or untracked files is never touched.
 * @example await pruneIdleWorktrees({ workspaceRoot, retentionMs: 7 * 86_400_000 });
 */
export async function pruneIdleWorktrees(options: PruneOptions): Promise<PruneResult> {
  const result: PruneResult = { removed: [], kept: [] };
  const now = (options.now ?? new Date()).getTime();
  const root = path.join(options.workspaceRoot, ".worktrees");
  for (const slug of await directories(root)) {
    const clone = projectDirectory(options.workspaceRoot, slug);
    if (!existsSync(path.join(clone, ".git"))) continue;
    // A turn fetching the clone or adding a worktree to it: look again next time.
    const cloneLock = await tryLock(cloneLockFile(options.workspaceRoot, slug), "worktree-prune");
    if (!cloneLock) continue;
    try {
      result.removed.push(...(await pruneProject(options, slug, clone, now, result)));
    } finally {
      await cloneLock.release();
    }
  }
  if (result.removed.length > 0) {
    options.logger?.info({ removed: result.removed }, "removed idle session worktrees");
  }
  return result;
}

/** Removes the project's idle worktrees (the clone's lock held); returns those removed. */
async function pruneProject(
  options: PruneOptions,
  slug: string,
  clone: string,
  now: number,
  result: PruneResult,
): Promise<string[]> {
  const removed: string[] = [];
  const root = path.join(options.workspaceRoot, ".worktrees");
  for (const sessionId of await directories(path.join(root, slug))) {
    const directory = worktreeDirectory(options.workspaceRoot, slug, sessionId);
    const lastUsed = await lastUsedAt(directory);
    if (now - lastUsed <= options.retentionMs) continue;
    const lock = await tryLock(
      worktreeLockFile(options.workspaceRoot, slug, sessionId),
      "worktree-prune",
    );
    if (!lock) {
      result.kept.push({ directory, reason: "a turn holds it" });
      continue;
    }
    try {
      // Plain `worktree remove` asks `git status --ignore-submodules=none` whether it is clean,
      // which enters nested repositories and runs their filters; the drone asks its own git
      // (which never enters them) and removes only a clean worktree, with --force.
      await defuseGitControlFiles(directory);
      // Spawned directly (localGit): a clean status prints nothing, and so do remove and prune.
      const status = await (await localGit(directory)).raw([
        "status",
        "--porcelain",
        "--untracked-files=normal",
      ]);
      if (status.trim() !== "") {
        result.kept.push({ directory, reason: "it has uncommitted or untracked files" });
        continue;
      }
      await (await localGit(clone)).raw(["worktree", "remove", "--force", directory]);
      removed.push(directory);
    } catch (error) {
      result.kept.push({ directory, reason: firstLine(error) });
      options.logger?.warn({ directory, err: firstLine(error) }, "idle worktree kept");
    } finally {
      await lock.release();
    }
  }
  if (removed.length > 0) await (await localGit(clone)).raw(["worktree", "prune"]);
  return removed;
}

async function directories(parent: string): Promise<string[]> {
  const entries = await readdir(parent, { withFileTypes: true }).catch(() => []);
  return entries.filter((entry) => entry.isDirectory()).map((entry) => entry.name);
}

/** When a turn last used the worktree: its record, else the directory's own time. */
async function lastUsedAt(directory: string): Promise<number> {
  const record = await readWorktreeRecord(directory);
  const recorded = record ? Date.parse(record.lastUsedAt) : Number.NaN;
  if (!Number.isNaN(recorded)) return recorded;
  return (await stat(directory)).mtimeMs;
}

export interface WorktreePrunerOptions extends Omit<PruneOptions, "now"> {
  /** How often to look for idle worktrees; default every hour. */
  intervalMs?: number;
}

/** Prunes idle worktrees at start and then periodically, while the drone runs. */
export class WorktreePruner {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: WorktreePrunerOptions) {}

  start(): void {
    const prune = () => {
      this.running = pruneIdleWorktrees(this.options).catch((error: unknown) =>
        this.options.logger?.warn({ err: firstLine(error) }, "pruning worktrees failed"),
      );
    };
    prune();
    this.timer = setInterval(prune, this.options.intervalMs ?? 3_600_000);
    this.timer.unref();
  }

  /** Stops pruning; resolves once a prune under way has ended. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }
}
