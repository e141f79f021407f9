// What every sandbox offers: turn a command (argv, cwd, environment) and a project's policy into
// the command that runs it confined, plus a report once it ended.
import type { NetworkPolicy, SandboxInfo } from "@gadget/protocol";
import type { Refusal } from "./network/host-allowlist.ts";

/** Where a command may write and what it may reach: one per turn, from the project and the drone. */
export interface ConfinementPolicy {
  /** Real path of the session's worktree: read-write, except its `.git`. */
  workspace: string;
  /** The project's private home directory on the drone (created if missing); `HOME` inside. */
  home: string;
  network: NetworkPolicy;
  /**
   * Paths that must stay invisible even where a read-only system directory would show them:
   * the drone's config, its journal, the root of every workspace.
   */
  hidden: readonly string[];
  /**
   * Directories shown read-only even inside hidden ones (the project's default-branch checkout an
   * MCP server starts from). Default: none.
   */
  readOnly?: readonly string[];
}

/** A command as the runner would spawn it without a sandbox. */
export interface CommandSpec {
  argv: readonly string[];
  /** Absolute working directory inside the workspace. */
  cwd: string;
  /** The environment after scrubbing (secrets already removed). */
  env: Readonly<Record<string, string>>;
}

/** What happened at the sandbox's edge while the command ran. */
export interface ConfinementReport {
  /** Connections the filtering proxy refused. */
  refused: Refusal[];
}

/** A command ready to spawn: spawn `argv` with `env`, then call `finish` once it has ended. */
export interface PreparedCommand {
  argv: string[];
  env: Record<string, string>;
  /** Releases what the sandbox set up for this command (proxy, process limit). Never throws. */
  finish(): Promise<ConfinementReport>;
}

/** An operating-system sandbox (or the explicit lack of one). */
export interface Sandbox {
  readonly info: SandboxInfo;
  /** Wraps one command in the policy. Throws a SandboxError when it cannot be confined. */
  prepare(command: CommandSpec, policy: ConfinementPolicy): Promise<PreparedCommand>;
}

/** A sandbox bound to one turn's policy: what the tools take. */
export interface CommandConfinement {
  readonly info: SandboxInfo;
  prepare(command: CommandSpec): Promise<PreparedCommand>;
}

/**
 * Binds a sandbox to one turn's policy.
 * @example const confinement = confine(sandbox, { workspace, home, network, hidden });
 */
export function confine(sandbox: Sandbox, policy: ConfinementPolicy): CommandConfinement {
  return {
    info: sandbox.info,
    prepare: (command) => sandbox.prepare(command, policy),
  };
}
