// Finds the sandbox this machine can run, and proves it works by confining one real command. No
// sandbox is never a silent fallback: the caller gets the problem and what to install.
import { execFile } from "node:child_process";
import { constants } from "node:fs";
import { access, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { BubblewrapSandbox } from "./bubblewrap.ts";
import { sandboxTag } from "./orphans.ts";
import { detectProcessLimiter, type ProcessLimiter } from "./process-limit.ts";
import type { Sandbox } from "./sandbox.ts";
import { SeatbeltSandbox } from "./seatbelt.ts";
import { type HostLayout, planSystemView } from "./system-view.ts";

const run = promisify(execFile);

export interface DetectOptions {
  layout: HostLayout;
  /** The drone's own directories (config, workspaces, journal): never visible to a command. */
  hidden: readonly string[];
  /** A private directory for proxy sockets and temporary directories. */
  runtimeDirectory: string;
  /** Tasks one command may run at most, where the machine lets the drone bound them. Default: 4,096. */
  maxProcesses?: number;
  /**
   * Set up the process limit (for root: move this process into its own pids cgroup). Default
   * true; false for a check that runs no commands afterwards (`gadget-drone status`, the launcher).
   */
  limitProcesses?: boolean;
  /** Use this bwrap instead of the one on the search path (tests, unusual installs). */
  bwrapPath?: string;
}

export type Detection =
  | { ok: true; sandbox: Sandbox; processLimit: ProcessLimiter["kind"] }
  | { ok: false; problem: string };

const linuxInstallHint =
  "install bubblewrap (Debian/Ubuntu: sudo apt-get install bubblewrap; Fedora: sudo dnf install bubblewrap; Arch: sudo pacman -S bubblewrap)";
const userNamespaceHint =
  "bwrap needs unprivileged user namespaces: check `sysctl kernel.unprivileged_userns_clone` (must be 1) and `user.max_user_namespaces` (must be > 0); on Ubuntu 24.04+ AppArmor restricts them (`sysctl kernel.apparmor_restrict_unprivileged_userns=0`, or an AppArmor profile for bwrap)";

/** The first executable called `name` on the search path. */
export async function findExecutable(
  name: string,
  searchPath: readonly string[],
): Promise<string | null> {
  for (const directory of searchPath) {
    if (!path.isAbsolute(directory)) continue;
    const candidate = path.join(directory, name);
    if (
      await access(candidate, constants.X_OK).then(
        () => true,
        () => false,
      )
    )
      return candidate;
  }
  return null;
}

/** Runs `true` confined, in a scratch workspace: the check that the sandbox really works here. */
async function probe(sandbox: Sandbox, runtimeDirectory: string): Promise<string | null> {
  const scratch = await mkdtemp(path.join(tmpdir(), "gadget-sandbox-probe-"));
  try {
    const workspace = path.join(scratch, "workspace");
    const { mkdir } = await import("node:fs/promises");
    await mkdir(workspace);
    const prepared = await sandbox.prepare(
      { argv: ["true"], cwd: workspace, env: { PATH: "/usr/bin:/bin" } },
      {
        workspace,
        home: path.join(scratch, "home"),
        network: { mode: "none", allowedHosts: [] },
        hidden: [runtimeDirectory],
      },
    );
    try {
      await run(prepared.argv[0] as string, prepared.argv.slice(1), {
        env: prepared.env,
        timeout: 10_000,
      });
      return null;
    } catch (error) {
      const stderr = String((error as { stderr?: string }).stderr ?? "").trim();
      return stderr || (error as Error).message;
    } finally {
      await prepared.finish();
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/**
 * The sandbox of this machine, proven by one confined command, or why there is none.
 * @example
 * const detection = await detectSandbox({ layout, hidden: [configDirectory, workspaceRoot], runtimeDirectory });
 * if (!detection.ok) throw new Error(detection.problem);
 */
export async function detectSandbox(options: DetectOptions): Promise<Detection> {
  const { layout } = options;
  if (process.platform === "linux") {
    const bwrapPath = options.bwrapPath ?? (await findExecutable("bwrap", layout.searchPath));
    if (!bwrapPath)
      return { ok: false, problem: `bubblewrap (bwrap) is not on PATH: ${linuxInstallHint}.` };
    let version: string;
    try {
      const { stdout } = await run(bwrapPath, ["--version"], { timeout: 5_000 });
      version = /(\d+\.\d+(?:\.\d+)?)/.exec(stdout)?.[1] ?? "unknown";
    } catch (error) {
      return {
        ok: false,
        problem: `${bwrapPath} does not run (${(error as Error).message}): ${linuxInstallHint}.`,
      };
    }
    const [major = 0, minor = 0] = version.split(".").map(Number);
    const limiter = await detectProcessLimiter({
      enabled: options.limitProcesses ?? true,
      maxProcesses: options.maxProcesses ?? 4096,
      uid: layout.uid,
      prlimit: await findExecutable("prlimit", layout.searchPath),
    });
    const sandbox = new BubblewrapSandbox({
      bwrapPath,
      version,
      disableUserNamespaces: major > 0 || minor >= 8,
      layout,
      view: await planSystemView(layout, options.hidden),
      limiter,
      tag: sandboxTag(options.runtimeDirectory),
      runtimeDirectory: options.runtimeDirectory,
    });
    const failure = await probe(sandbox, options.runtimeDirectory);
    if (failure)
      return {
        ok: false,
        problem: `bubblewrap ${version} cannot start a sandbox here: ${failure}. ${userNamespaceHint}.`,
      };
    return { ok: true, sandbox, processLimit: limiter.kind };
  }
  if (process.platform === "darwin") {
    const executable = "/usr/bin/sandbox-exec";
    if (
      !(await access(executable, constants.X_OK).then(
        () => true,
        () => false,
      ))
    ) {
      return {
        ok: false,
        problem: "sandbox-exec is missing from /usr/bin; this macOS cannot confine commands.",
      };
    }
    const nodePrefix = path.dirname(path.dirname(layout.nodePath));
    const sandbox = new SeatbeltSandbox({
      executable,
      readable: [nodePrefix, ...(layout.readOnlyPaths ?? [])],
      home: layout.home,
      runtimeDirectory: options.runtimeDirectory,
    });
    const failure = await probe(sandbox, options.runtimeDirectory);
    if (failure)
      return { ok: false, problem: `sandbox-exec cannot confine a command here: ${failure}.` };
    return { ok: true, sandbox, processLimit: "none" };
  }
  return {
    ok: false,
    problem: `Gadget has no sandbox for ${process.platform} yet (bubblewrap on Linux, Seatbelt on macOS).`,
  };
}
