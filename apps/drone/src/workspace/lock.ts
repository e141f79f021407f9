// A checkout's runtime lock (docs/architecture.md, "The drone's side"): an exclusive lock file holding the owner's PID, so two turns never edit
// the same checkout at once. A lock left by a dead process (or an earlier life of its PID) is reclaimed.
import { mkdir, open, readFile, rm } from "node:fs/promises";
import path from "node:path";
import { isSameProcess, ownIdentity } from "../process-identity.ts";

export interface WorkspaceLock {
  readonly file: string;
  release(): Promise<void>;
}

export interface LockOwner {
  pid: number;
  /** Which life of `pid` holds it (process-identity.ts): a restarted drone may get the same PID. */
  identity?: string;
  turnId: string;
  since: string;
}

/** Reads who holds a lock file, or null when there is none (or it is unreadable). */
export async function lockOwner(file: string): Promise<LockOwner | null> {
  try {
    return JSON.parse(await readFile(file, "utf8")) as LockOwner;
  } catch {
    return null;
  }
}

/**
 * Takes the lock or returns null when a live process holds it. Locks of dead processes are removed.
 * @example const lock = await tryLock(path.join(root, ".locks", "demo.lock"), turnId);
 */
export async function tryLock(file: string, turnId: string): Promise<WorkspaceLock | null> {
  await mkdir(path.dirname(file), { recursive: true });
  const identity = await ownIdentity();
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const handle = await open(file, "wx", 0o600);
      const owner: LockOwner = {
        pid: process.pid,
        ...(identity ? { identity } : {}),
        turnId,
        since: new Date().toISOString(),
      };
      await handle.writeFile(JSON.stringify(owner));
      await handle.close();
      return {
        file,
        release: async () => {
          const current = await lockOwner(file);
          if (current?.pid === process.pid && current.turnId === turnId)
            await rm(file, { force: true });
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const owner = await lockOwner(file);
      // Reclaim a lock whose process is gone (or a half-written one); otherwise it is busy.
      if (owner && (await isSameProcess(owner.pid, owner.identity))) return null;
      await rm(file, { force: true });
    }
  }
  return null;
}

/** Waits for the lock, polling every `intervalMs`, until `signal` aborts. */
export async function acquireLock(
  file: string,
  turnId: string,
  options: {
    signal?: AbortSignal;
    intervalMs?: number;
    onWait?: (owner: LockOwner | null) => void;
  } = {},
): Promise<WorkspaceLock> {
  let announced = false;
  for (;;) {
    options.signal?.throwIfAborted();
    const lock = await tryLock(file, turnId);
    if (lock) return lock;
    if (!announced) {
      options.onWait?.(await lockOwner(file));
      announced = true;
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 250));
  }
}
