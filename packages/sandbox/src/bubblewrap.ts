// The Linux sandbox: each command runs under bubblewrap in new user, pid, ipc, uts and cgroup
// namespaces (and a new network namespace unless the project's network is open), with the system
// read-only, the worktree read-write but for its .git, a private HOME (at its own path) and /tmp,
// and no capabilities.
import { randomBytes } from "node:crypto";
import { lstat, mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { SandboxInfo } from "@gadget/protocol";
import { SandboxError } from "./errors.ts";
import { gitPaths } from "./git-directory.ts";
import { bridgePort, bridgeSocketPath, bridgeSource, proxyEnvironment } from "./network/bridge.ts";
import { FilteringProxy } from "./network/filtering-proxy.ts";
import type { Refusal } from "./network/host-allowlist.ts";
import type { ProcessLimiter } from "./process-limit.ts";
import type { CommandSpec, ConfinementPolicy, PreparedCommand, Sandbox } from "./sandbox.ts";
import { sandboxEnvironment } from "./sandbox-environment.ts";
import { type HostLayout, isWithin, type SystemView } from "./system-view.ts";

export interface BubblewrapOptions {
  /** The bwrap executable. */
  bwrapPath: string;
  /** `bwrap --version`'s number, e.g. "0.8.0". */
  version: string;
  /** bwrap ≥ 0.8 can forbid new user namespaces inside the sandbox. */
  disableUserNamespaces: boolean;
  layout: HostLayout;
  view: SystemView;
  limiter: ProcessLimiter;
  /** Marks this drone's sandboxes (GADGET_SANDBOX inside), so a restarted drone can end orphans. */
  tag: string;
  /** A private directory (mode 0700) for the filtering proxies' sockets. */
  runtimeDirectory: string;
}

/** Everything one bwrap command line depends on. */
export interface BubblewrapPlan {
  view: SystemView;
  layout: HostLayout;
  policy: ConfinementPolicy;
  cwd: string;
  disableUserNamespaces: boolean;
  /** Read-only git directories of the worktree (see gitPaths). */
  gitPaths: readonly string[];
  /** The filtering proxy's socket on the host, when the network is an allowlist. */
  proxySocket: string | null;
  /** The policy's hidden paths that exist as directories (only those can be covered). */
  hiddenDirectories: readonly string[];
  /** The drone's sandbox tag (see BubblewrapOptions.tag). */
  tag: string;
}

/** Where a path would show inside the sandbox, apart from the workspace and the private home. */
function visibleThroughView(view: SystemView, target: string): boolean {
  return view.visibleRoots.some((root) => isWithin(root, target));
}

/**
 * The bwrap arguments (up to `--`) for one command. Later mounts cover earlier ones, so the order
 * is: system, masks, an empty home directory with the toolchains in it, hidden paths, the private
 * home, the workspace, its .git, the proxy.
 *
 * Every mount point bwrap makes lies in a fresh tmpfs, never in a directory a command could have
 * written before: the private home persists between commands, so a link planted there (`~/.config
 * -> /oldroot/<host dir>`) would have bwrap make the next mount point on the host. The private
 * home is therefore bound at its own path, as nothing's parent, and is HOME inside.
 */
export function bubblewrapArguments(plan: BubblewrapPlan): string[] {
  const { view, layout, policy } = plan;
  const args = [
    "--unshare-user",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    ...(policy.network.mode === "open" ? [] : ["--unshare-net"]),
    "--die-with-parent",
    ...(plan.disableUserNamespaces ? ["--disable-userns"] : []),
    // root's sandbox would keep every capability inside its user namespace (remounts included).
    "--cap-drop",
    "ALL",
    "--hostname",
    "gadget-sandbox",
    "--setenv",
    "GADGET_SANDBOX",
    plan.tag,
    ...view.systemArguments,
    "--proc",
    "/proc",
    "--dev",
    "/dev",
    "--tmpfs",
    "/tmp",
  ];
  if (policy.network.mode === "open") {
    // /etc/resolv.conf may point into /run (systemd-resolved); nothing else of /run is shown.
    args.push("--ro-bind-try", "/run/systemd/resolve", "/run/systemd/resolve");
  }
  for (const file of view.maskedFiles.filter((file) => !isWithin(layout.home, file))) {
    args.push("--ro-bind", "/dev/null", file);
  }
  for (const directory of view.maskedDirectories) args.push("--tmpfs", directory);
  // The real home's path holds only the toolchains on PATH, in a tmpfs made for this command.
  if (layout.home !== "/") args.push("--tmpfs", layout.home);
  for (const directory of view.toolchains) args.push("--ro-bind", directory, directory);
  for (const file of view.maskedFiles.filter((file) => isWithin(layout.home, file))) {
    args.push("--ro-bind", "/dev/null", file);
  }
  // An empty tmpfs over each of the drone's own directories that would show (through a system
  // directory, a toolchain, or as mount points in the private home); the worktree is bound after.
  for (const hidden of plan.hiddenDirectories) {
    if (visibleThroughView(view, hidden) || isWithin(layout.home, hidden)) {
      args.push("--tmpfs", hidden);
    }
  }
  for (const directory of policy.readOnly ?? []) args.push("--ro-bind", directory, directory);
  args.push("--bind", policy.home, policy.home);
  args.push("--bind", policy.workspace, policy.workspace);
  for (const gitPath of plan.gitPaths) args.push("--ro-bind", gitPath, gitPath);
  if (plan.proxySocket) args.push("--bind", plan.proxySocket, bridgeSocketPath);
  args.push("--chdir", plan.cwd);
  return args;
}

/** Linux: bubblewrap. Build with `detectSandbox`, which checks bwrap works on this machine first. */
export class BubblewrapSandbox implements Sandbox {
  readonly info: SandboxInfo;

  constructor(private readonly options: BubblewrapOptions) {
    this.info = { kind: "bubblewrap", version: options.version, network: "isolated" };
  }

  /** How processes are bounded, for `gadget-drone status`. */
  get processLimit(): ProcessLimiter {
    return this.options.limiter;
  }

  async prepare(command: CommandSpec, policy: ConfinementPolicy): Promise<PreparedCommand> {
    const options = this.options;
    await mkdir(policy.home, { recursive: true, mode: 0o700 });
    const refused: Refusal[] = [];
    let proxy: FilteringProxy | null = null;
    let proxySocket: string | null = null;
    let socketDirectory: string | null = null;
    if (policy.network.mode === "allowlist") {
      socketDirectory = await privateSocketDirectory(options.runtimeDirectory);
      proxySocket = path.join(socketDirectory, "proxy.sock");
      proxy = new FilteringProxy({
        allowedHosts: policy.network.allowedHosts,
        onRefused: (refusal) => refused.push(refusal),
      });
      await proxy.listen({ path: proxySocket });
    }
    const args = bubblewrapArguments({
      view: options.view,
      layout: options.layout,
      policy,
      cwd: command.cwd,
      disableUserNamespaces: options.disableUserNamespaces,
      gitPaths: await gitPaths(policy.workspace),
      proxySocket,
      hiddenDirectories: await existingDirectories(policy.hidden),
      tag: options.tag,
    });
    const program = proxy
      ? [
          options.layout.nodePath,
          "-e",
          bridgeSource,
          bridgeSocketPath,
          String(bridgePort),
          ...command.argv,
        ]
      : [...command.argv];
    const env = sandboxEnvironment(command.env, {
      home: policy.home,
      cwd: command.cwd,
      network: policy.network.mode,
      ...(proxy ? { proxy: proxyEnvironment() } : {}),
    });
    return {
      argv: [options.bwrapPath, ...args, "--", ...options.limiter.inside, ...program],
      env,
      finish: async () => {
        await proxy?.close();
        if (socketDirectory) await rm(socketDirectory, { recursive: true, force: true });
        return { refused };
      },
    };
  }
}

/** Longest unix socket path Linux takes (sun_path is 108 bytes with its terminating zero). */
const maxSocketPath = 107;

/**
 * A fresh private (0700) directory for one command's proxy socket: under the runtime directory,
 * or under the system's temporary directory when that path would be too long for a socket.
 */
async function privateSocketDirectory(runtimeDirectory: string): Promise<string> {
  const preferred = path.join(runtimeDirectory, `proxy-${randomBytes(6).toString("hex")}`);
  if (path.join(preferred, "proxy.sock").length <= maxSocketPath) {
    await mkdir(preferred, { recursive: true, mode: 0o700 });
    return preferred;
  }
  for (const parent of [tmpdir(), "/tmp"]) {
    if (path.join(parent, "gadget-proxy-XXXXXX", "proxy.sock").length <= maxSocketPath) {
      return mkdtemp(path.join(parent, "gadget-proxy-"));
    }
  }
  throw new SandboxError("sandbox_failed", "No directory short enough for the proxy's socket");
}

/** The paths that are directories now (a tmpfs can only cover a directory). */
async function existingDirectories(paths: readonly string[]): Promise<string[]> {
  const checks = await Promise.all(
    paths.map((target) =>
      lstat(target).then(
        (stats) => stats.isDirectory(),
        () => false,
      ),
    ),
  );
  return paths.filter((_, index) => checks[index]);
}
