// The macOS sandbox: sandbox-exec with a profile generated per command from the project's policy.
// Deny by default; read the system, the toolchains, the worktree (and the git directories its .git
// points to) and the private home; write the worktree (not its .git), the private home and a
// private temporary directory.
import { randomBytes } from "node:crypto";
import { mkdir, rm } from "node:fs/promises";
import path from "node:path";
import type { SandboxInfo } from "@gadget/protocol";
import { gitPaths } from "./git-directory.ts";
import { proxyEnvironment } from "./network/bridge.ts";
import { FilteringProxy } from "./network/filtering-proxy.ts";
import type { Refusal } from "./network/host-allowlist.ts";
import type { CommandSpec, ConfinementPolicy, PreparedCommand, Sandbox } from "./sandbox.ts";
import { sandboxEnvironment } from "./sandbox-environment.ts";

/** What a profile is generated from. */
export interface SeatbeltPlan {
  policy: ConfinementPolicy;
  /** The command's private temporary directory. */
  temporaryDirectory: string;
  /** Read-only directories besides the system's: toolchains, Node's prefix. */
  readable: readonly string[];
  /** The filtering proxy's loopback port, when the network is an allowlist. */
  proxyPort: number | null;
  /**
   * The worktree's git directories outside it (a session worktree's, the clone's shared one; see
   * gitPaths): readable so `git status` works, never writable. Default none.
   */
  gitPaths?: readonly string[];
}

/** System locations every macOS program reads. */
const systemReadable = [
  "/usr",
  "/bin",
  "/sbin",
  "/System",
  "/Library",
  "/opt",
  "/private/etc",
  "/private/var/db/timezone",
  "/private/var/db/dyld",
  "/dev",
  "/Applications/Xcode.app",
];

/** An SBPL string literal. */
function quote(value: string): string {
  return `"${value.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`;
}

/**
 * The sandbox-exec profile for one command.
 * @example spawn("sandbox-exec", ["-p", seatbeltProfile(plan), "--", "npm", "test"])
 */
export function seatbeltProfile(plan: SeatbeltPlan): string {
  const { policy } = plan;
  const subpaths = (paths: readonly string[]) =>
    paths.map((item) => `(subpath ${quote(item)})`).join(" ");
  const lines = [
    "(version 1)",
    "(deny default)",
    "(allow process-fork)",
    "(allow process-exec)",
    "(allow signal (target same-sandbox))",
    "(allow sysctl-read)",
    "(allow ipc-posix-shm)",
    "(allow file-read-metadata)",
    '(allow mach-lookup (global-name "com.apple.system.opendirectoryd.libinfo") (global-name "com.apple.system.notification_center") (global-name "com.apple.SystemConfiguration.configd") (global-name "com.apple.trustd.agent"))',
    `(allow file-read* (literal "/") ${subpaths([...systemReadable, ...plan.readable])})`,
    `(allow file-read* ${subpaths([policy.workspace, policy.home, plan.temporaryDirectory, ...(plan.gitPaths ?? []), ...(policy.readOnly ?? [])])})`,
    // The worktree is writable except its .git: the drone commits, the agent does not.
    `(allow file-write* (require-all (subpath ${quote(policy.workspace)}) (require-not (subpath ${quote(path.join(policy.workspace, ".git"))}))))`,
    `(allow file-write* ${subpaths([policy.home, plan.temporaryDirectory])} (literal "/dev/null") (literal "/dev/zero") (literal "/dev/tty"))`,
  ];
  if (policy.network.mode === "open") {
    lines.push("(allow network*)", "(allow system-socket)");
  } else if (policy.network.mode === "allowlist" && plan.proxyPort !== null) {
    lines.push(
      `(allow network-outbound (remote tcp ${quote(`localhost:${plan.proxyPort}`)}))`,
      "(allow system-socket)",
    );
  }
  return `${lines.join("\n")}\n`;
}

export interface SeatbeltOptions {
  /** macOS's sandbox-exec. */
  executable: string;
  /** Readable directories besides the system's (toolchains in the home directory, Node). */
  readable: readonly string[];
  home: string;
  runtimeDirectory: string;
}

/** macOS: sandbox-exec. Processes end with the command's process group (no pid namespace). */
export class SeatbeltSandbox implements Sandbox {
  readonly info: SandboxInfo = { kind: "seatbelt", version: null, network: "isolated" };

  constructor(private readonly options: SeatbeltOptions) {}

  async prepare(command: CommandSpec, policy: ConfinementPolicy): Promise<PreparedCommand> {
    await mkdir(policy.home, { recursive: true, mode: 0o700 });
    const temporaryDirectory = path.join(
      this.options.runtimeDirectory,
      `tmp-${randomBytes(6).toString("hex")}`,
    );
    await mkdir(temporaryDirectory, { recursive: true, mode: 0o700 });
    const refused: Refusal[] = [];
    let proxy: FilteringProxy | null = null;
    if (policy.network.mode === "allowlist") {
      proxy = new FilteringProxy({
        allowedHosts: policy.network.allowedHosts,
        onRefused: (refusal) => refused.push(refusal),
      });
      await proxy.listen({ port: 0 });
    }
    const profile = seatbeltProfile({
      policy,
      temporaryDirectory,
      readable: this.options.readable,
      proxyPort: proxy?.port ?? null,
      gitPaths: await gitPaths(policy.workspace),
    });
    const env = {
      ...sandboxEnvironment(command.env, {
        home: policy.home,
        cwd: command.cwd,
        network: policy.network.mode,
        ...(proxy?.port ? { proxy: proxyEnvironment(proxy.port) } : {}),
      }),
      TMPDIR: temporaryDirectory,
    };
    return {
      argv: [this.options.executable, "-p", profile, "--", ...command.argv],
      env,
      finish: async () => {
        await proxy?.close();
        await rm(temporaryDirectory, { recursive: true, force: true });
        return { refused };
      },
    };
  }
}
