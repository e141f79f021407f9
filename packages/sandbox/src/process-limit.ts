// Bounds how many processes the agent's commands may run, so a fork bomb stays a small, timed-out
// command. A drone of an ordinary user: RLIMIT_NPROC per command (util-linux's prlimit inside the
// sandbox). Root, whom the kernel exempts from RLIMIT_NPROC: one pids cgroup for the drone and
// everything it starts, joined once at start — joining a cgroup per command costs 10–20 ms here
// (an RCU grace period), more than the rest of the sandbox. Neither available: no bound but the
// command's timeout and its pid namespace.
import { constants } from "node:fs";
import { access, mkdir, readdir, readFile, rmdir, writeFile } from "node:fs/promises";
import path from "node:path";

export type ProcessLimitKind = "rlimit" | "cgroup" | "none";

/** Programs to run inside the sandbox before the command (prlimit), per command. */
export interface ProcessLimiter {
  readonly kind: ProcessLimitKind;
  /** The bound: per command (rlimit) or for the drone and all its commands together (cgroup). */
  readonly maxProcesses: number;
  /** argv prefix inside the sandbox, e.g. `prlimit --nproc=4096 --`. */
  readonly inside: readonly string[];
}

/** The pids controller's directory for new cgroups, if this process may create them. */
async function writablePidsHierarchy(): Promise<string | null> {
  const mounts = await readFile("/proc/self/mountinfo", "utf8").catch(() => "");
  for (const line of mounts.split("\n")) {
    const [before, after] = line.split(" - ");
    if (!before || !after) continue;
    const mountPoint = before.split(" ")[4];
    const [type, , options] = after.split(" ");
    if (!mountPoint) continue;
    const pids =
      (type === "cgroup" && options?.split(",").includes("pids")) ||
      (type === "cgroup2" &&
        (await readFile(path.join(mountPoint, "cgroup.controllers"), "utf8").catch(() => ""))
          .split(/\s+/)
          .includes("pids"));
    if (!pids) continue;
    if (
      await access(mountPoint, constants.W_OK).then(
        () => true,
        () => false,
      )
    )
      return mountPoint;
  }
  return null;
}

/** Whether a process still runs. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Moves this process (the drone) into `gadget-sandbox/drone-<pid>` with `pids.max`; every command
 * it starts inherits the cgroup. Cgroups of drones that are gone are removed. Null if not allowed.
 */
async function joinDroneCgroup(hierarchy: string, maxProcesses: number): Promise<string | null> {
  const parent = path.join(hierarchy, "gadget-sandbox");
  try {
    await mkdir(parent, { recursive: true });
    // cgroup v2: the parent must hand the pids controller down to its children.
    const subtree = path.join(parent, "cgroup.subtree_control");
    if (
      await access(subtree, constants.W_OK).then(
        () => true,
        () => false,
      )
    ) {
      await writeFile(subtree, "+pids").catch(() => {});
    }
    for (const name of await readdir(parent)) {
      const owner = /^drone-(\d+)$/.exec(name)?.[1];
      if (owner && !alive(Number(owner))) await rmdir(path.join(parent, name)).catch(() => {});
    }
    const own = path.join(parent, `drone-${process.pid}`);
    await mkdir(own, { recursive: true });
    await writeFile(path.join(own, "pids.max"), String(maxProcesses));
    await writeFile(path.join(own, "cgroup.procs"), String(process.pid));
    return own;
  } catch {
    return null;
  }
}

/**
 * The best process limit this machine allows the drone. For root it moves the calling process
 * into its own pids cgroup, so call it once, from the drone, before commands run.
 * @example const limiter = await detectProcessLimiter({ maxProcesses: 4096, uid, prlimit });
 */
export async function detectProcessLimiter(options: {
  /** False: report what would be used, join nothing (the rlimit needs no set-up). */
  enabled?: boolean;
  maxProcesses: number;
  uid: number;
  /** util-linux's prlimit, when found. */
  prlimit: string | null;
}): Promise<ProcessLimiter> {
  // The kernel exempts root (uid 0 of the first user namespace) from RLIMIT_NPROC.
  if (options.uid !== 0 && options.prlimit) {
    return {
      kind: "rlimit",
      maxProcesses: options.maxProcesses,
      inside: [options.prlimit, `--nproc=${options.maxProcesses}`, "--"],
    };
  }
  if (process.platform === "linux") {
    const hierarchy = await writablePidsHierarchy();
    const joined =
      hierarchy !== null &&
      (options.enabled === false ||
        (await joinDroneCgroup(hierarchy, options.maxProcesses)) !== null);
    if (joined) {
      return { kind: "cgroup", maxProcesses: options.maxProcesses, inside: [] };
    }
  }
  return { kind: "none", maxProcesses: 0, inside: [] };
}
