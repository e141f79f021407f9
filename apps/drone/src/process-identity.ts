// Whether a PID written down earlier (a lock's owner, the running drone) is still that process.
// A PID alone is not enough: a drone restarted in its container gets the same PID as the one that
// died (tini forks it first every time), and PIDs wrap. On Linux a process is its PID plus its
// start time since boot, and the boot; elsewhere the PID is all there is.
import { readFile } from "node:fs/promises";

/** Boot id and start time (clock ticks since boot) of `pid`, or null where /proc cannot say. */
export async function processIdentity(pid: number): Promise<string | null> {
  try {
    const [bootId, stat] = await Promise.all([
      readFile("/proc/sys/kernel/random/boot_id", "utf8"),
      readFile(`/proc/${pid}/stat`, "utf8"),
    ]);
    // The command name (field 2) is in parentheses and may hold spaces or ")": fields after the
    // last ")" start at field 3, so the start time (field 22) is the 20th of them.
    const startTime = stat
      .slice(stat.lastIndexOf(")") + 2)
      .split(" ")
      .at(19);
    return startTime ? `${bootId.trim()}:${startTime}` : null;
  } catch {
    return null;
  }
}

let own: Promise<string | null> | undefined;

/** This process's identity, read once. */
export function ownIdentity(): Promise<string | null> {
  own ??= processIdentity(process.pid);
  return own;
}

/**
 * Whether `pid` is still the process that wrote `identity` down. Without an identity (written by
 * an older drone, or where /proc cannot say) the PID is trusted, except this process's own PID:
 * everything this process writes carries its identity, so such a record is an earlier life's.
 */
export async function isSameProcess(pid: number, identity: string | undefined): Promise<boolean> {
  // 0 and below name process groups, not a process (a stopped drone writes pid 0).
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  const current = await processIdentity(pid);
  if (identity === undefined) return !(pid === process.pid && current !== null);
  return current === null || current === identity;
}
