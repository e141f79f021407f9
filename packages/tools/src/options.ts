// The options that shape the tools (limits, deny list, secrets), with their defaults in one place.
import type { CommandConfinement } from "@gadget/sandbox";

/** A pino-compatible logger; the tools log at debug level and never log secrets or environments. */
export interface Logger {
  debug(object: object, message?: string): void;
  info(object: object, message?: string): void;
  warn(object: object, message?: string): void;
  error(object: object, message?: string): void;
}

/**
 * Commands refused by default. Each entry is a program name optionally followed by a
 * subcommand and/or options: `"sudo"` refuses any sudo, `"git push"` refuses git's push
 * subcommand wherever git's global options put it, `"git -c"` refuses that option before the
 * subcommand, `"bash -c"` refuses running a shell on a string.
 */
export const DEFAULT_DENIED_COMMANDS: readonly string[] = [
  "sudo",
  "su",
  "doas",
  "pkexec",
  "chroot",
  "git push",
  "git -c",
  "git --config-env",
  "git --exec-path",
  "git config",
  "git credential",
  "git daemon",
  "npm publish",
  "pnpm publish",
  "yarn publish",
  "sh -c",
  "bash -c",
  "zsh -c",
  "dash -c",
  "ksh -c",
  "fish -c",
  "env",
  "xargs",
  "eval",
  "exec",
  "shutdown",
  "reboot",
  "halt",
  "poweroff",
  "mkfs",
];

export interface ToolsOptions {
  /**
   * Commands run_command (and the drone's verification commands) refuse, in the form of
   * {@link DEFAULT_DENIED_COMMANDS}. Default: `DEFAULT_DENIED_COMMANDS`; pass
   * `[...DEFAULT_DENIED_COMMANDS, "docker"]` to extend it.
   */
  deniedCommands?: readonly string[];
  /**
   * Secret values (e.g. the drone's credential): variables holding them are removed from the
   * environment and they are replaced by `[redacted]` in command output (also reversed, base64
   * and hex). Default: `[]`.
   */
  secretValues?: readonly string[];
  /**
   * The host environment commands take PATH, HOME, LANG, LC_*, TERM, TZ and TMPDIR from (nothing
   * else of it passes). Default: this process's environment.
   */
  env?: Readonly<Record<string, string | undefined>>;
  /** The project's own variables every command gets. Default: none. */
  projectEnv?: Readonly<Record<string, string>>;
  /** A command's timeout when the model gives none. Default: 120,000 ms. */
  commandTimeoutMs?: number;
  /** The longest timeout the model may ask for. Default: 600,000 ms. */
  maxCommandTimeoutMs?: number;
  /** Between SIGTERM and SIGKILL to a command's process group. Default: 2,000 ms. */
  killGraceMs?: number;
  /** Bytes of command output the model sees (half head, half tail). Default: 10,240. */
  maxCommandOutputBytes?: number;
  /** Lines of command output the model sees (half head, half tail). Default: 256. */
  maxCommandOutputLines?: number;
  /** Bytes of a command's output streamed through onOutput before streaming stops. Default: 1 MiB. */
  maxStreamedOutputBytes?: number;
  /**
   * Path of ripgrep. Default: `rg` found on the PATH of `env`; `null` forces the Node
   * fallback (same output, slower).
   */
  ripgrepPath?: string | null;
  /** Lines read_file returns at most per call. Default: 2,000. */
  maxReadLines?: number;
  /** Characters of one line read_file shows before cutting it. Default: 2,000. */
  maxLineLength?: number;
  /** Bytes of file content read_file returns per call. Default: 65,536. */
  maxReadBytes?: number;
  /** Largest content write_file and edit_file write. Default: 10 MiB. */
  maxWriteBytes?: number;
  /** Entries list_dir shows. Default: 500. */
  maxListEntries?: number;
  /** Paths glob returns. Default: 500. */
  maxGlobResults?: number;
  /** Matches grep returns. Default: 300. */
  maxGrepMatches?: number;
  /** Characters of a matching line grep shows (a window around the match). Default: 500. */
  maxGrepLineLength?: number;
  /** Logger for debug information. Default: none. */
  logger?: Logger;
  /**
   * The operating-system sandbox every command runs in (run_command and verification), bound to
   * the turn's policy. Default: none — commands run as the host's user; only tests and hosts that
   * chose `Unconfined` knowingly should leave it out.
   */
  sandbox?: CommandConfinement;
}

/** Options with every default filled in. */
export type ResolvedToolsOptions = Required<
  Omit<ToolsOptions, "logger" | "ripgrepPath" | "sandbox">
> & {
  ripgrepPath: string | null | undefined;
  logger: Logger | undefined;
  sandbox: CommandConfinement | undefined;
};

/** Fills in the defaults documented on {@link ToolsOptions}. */
export function resolveToolsOptions(options: ToolsOptions = {}): ResolvedToolsOptions {
  return {
    deniedCommands: options.deniedCommands ?? DEFAULT_DENIED_COMMANDS,
    projectEnv: options.projectEnv ?? {},
    secretValues: (options.secretValues ?? []).filter((value) => value.length > 0),
    // biome-ignore lint/style/noProcessEnv: the documented default: commands inherit the host's environment.
    env: options.env ?? process.env,
    commandTimeoutMs: options.commandTimeoutMs ?? 120_000,
    maxCommandTimeoutMs: options.maxCommandTimeoutMs ?? 600_000,
    killGraceMs: options.killGraceMs ?? 2_000,
    maxCommandOutputBytes: options.maxCommandOutputBytes ?? 10 * 1024,
    maxCommandOutputLines: options.maxCommandOutputLines ?? 256,
    maxStreamedOutputBytes: options.maxStreamedOutputBytes ?? 1024 * 1024,
    ripgrepPath: options.ripgrepPath,
    maxReadLines: options.maxReadLines ?? 2_000,
    maxLineLength: options.maxLineLength ?? 2_000,
    maxReadBytes: options.maxReadBytes ?? 64 * 1024,
    maxWriteBytes: options.maxWriteBytes ?? 10 * 1024 * 1024,
    maxListEntries: options.maxListEntries ?? 500,
    maxGlobResults: options.maxGlobResults ?? 500,
    maxGrepMatches: options.maxGrepMatches ?? 300,
    maxGrepLineLength: options.maxGrepLineLength ?? 500,
    logger: options.logger,
    sandbox: options.sandbox,
  };
}
