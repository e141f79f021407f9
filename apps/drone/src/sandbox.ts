// The drone's sandbox: found and proven at start (bubblewrap on Linux, Seatbelt on macOS), or the
// explicit lack of one with --no-sandbox. The drone's own files are never visible to a command.
import { homedir } from "node:os";
import path from "node:path";
import { UserError } from "@gadget/protocol";
import {
  detectSandbox,
  endOrphanedSandboxes,
  type ProcessLimitKind,
  type Sandbox,
  sandboxTag,
  Unconfined,
} from "@gadget/sandbox";
import type { DroneConfig } from "./config.ts";
import { searchPath } from "./env.ts";

export interface DroneSandbox {
  sandbox: Sandbox;
  /** How one command's processes are bounded (`none`: by its timeout and pid namespace only). */
  processLimit: ProcessLimitKind;
  /** Directories a command must never see: the config's, the workspaces', the runtime one. */
  hidden: string[];
}

/** Where the sandbox keeps proxy sockets and temporary directories: inside the workspace root. */
export function runtimeDirectory(config: DroneConfig): string {
  return path.join(config.workspace, ".run");
}

/** Each project's private HOME (package caches survive between turns). */
export function projectHome(config: Pick<DroneConfig, "workspace">, slug: string): string {
  return path.join(config.workspace, ".homes", slug);
}

/**
 * Finds and proves this machine's sandbox; throws a UserError naming what to install unless
 * `noSandbox` (then commands run unconfined, and say so).
 * @example const { sandbox } = await openSandbox(config, configFile, { noSandbox: false });
 */
export async function openSandbox(
  config: DroneConfig,
  configFile: string,
  options: {
    noSandbox: boolean;
    /** false: only check (status); true: this process will run commands (start). Default true. */
    willRun?: boolean;
  },
): Promise<DroneSandbox> {
  const willRun = options.willRun ?? true;
  const hidden = [
    path.dirname(path.resolve(configFile)),
    config.workspace,
    runtimeDirectory(config),
  ];
  if (options.noSandbox) return { sandbox: new Unconfined(), processLimit: "none", hidden };
  const detection = await detectSandbox({
    layout: {
      home: homedir(),
      searchPath: searchPath(),
      nodePath: process.execPath,
      uid: process.getuid?.() ?? -1,
      readOnlyPaths: config.sandbox?.readOnlyPaths ?? [],
    },
    hidden,
    runtimeDirectory: runtimeDirectory(config),
    limitProcesses: willRun,
  });
  // Sandboxes an earlier run of this drone left (killed as it was starting one) end now.
  if (willRun) await endOrphanedSandboxes(sandboxTag(runtimeDirectory(config)));
  if (!detection.ok) {
    throw new UserError(
      "sandbox_unavailable",
      `${detection.problem} To run commands without a sandbox (as your own user, with your files and network), start with --no-sandbox.`,
    );
  }
  return { sandbox: detection.sandbox, processLimit: detection.processLimit, hidden };
}

/** One line for `status` and the start banner: "bubblewrap 0.8.0, network isolated, processes bounded per command". */
export function describeSandbox(sandbox: Sandbox["info"], processLimit: ProcessLimitKind): string {
  if (sandbox.kind === "none") return "none — unsandboxed (started with --no-sandbox)";
  const bound = {
    rlimit: "processes bounded per command (RLIMIT_NPROC)",
    cgroup: "processes bounded for the drone and its commands together (pids cgroup)",
    none: "processes bounded by each command's timeout only",
  }[processLimit];
  return `${sandbox.kind}${sandbox.version ? ` ${sandbox.version}` : ""}, network ${sandbox.network}, ${bound}`;
}
