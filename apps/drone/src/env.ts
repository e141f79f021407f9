// The drone's environment: the only file of the drone that reads process.env.
import { homedir } from "node:os";
import path from "node:path";

/** Where the config lives unless --config says otherwise: $GADGET_DRONE_CONFIG, else ~/.config/gadget-drone/config.json. */
export function defaultConfigFile(): string {
  if (process.env.GADGET_DRONE_CONFIG) return path.resolve(process.env.GADGET_DRONE_CONFIG);
  const base = process.env.XDG_CONFIG_HOME || path.join(homedir(), ".config");
  return path.join(base, "gadget-drone", "config.json");
}

/** Default root for project checkouts: ~/.local/share/gadget-drone/workspaces. */
export function defaultWorkspaceRoot(): string {
  const base = process.env.XDG_DATA_HOME || path.join(homedir(), ".local", "share");
  return path.join(base, "gadget-drone", "workspaces");
}

/** LOG_LEVEL for the drone's log file and --json output; default info. */
export function logLevel(): string {
  return process.env.LOG_LEVEL ?? "info";
}

/**
 * GADGET_DRONE_HEARTBEAT_MS: how often the drone renews its lease on running turns; default 10 000.
 * Keep it well under the server's DRONE_GRACE_MS.
 */
export function heartbeatMs(): number | undefined {
  const value = Number(process.env.GADGET_DRONE_HEARTBEAT_MS);
  return Number.isInteger(value) && value >= 100 ? value : undefined;
}

/**
 * GADGET_DRONE_MAX_QUOTA_WAIT_MS: how long, in all, a turn waits out a provider's rate limit that
 * outlasts the call's retries before it fails (`quota_wait_exceeded`); default 21 600 000 (6 h).
 */
export function maxQuotaWaitMs(): number | undefined {
  const value = Number(process.env.GADGET_DRONE_MAX_QUOTA_WAIT_MS);
  return Number.isInteger(value) && value >= 0 ? value : undefined;
}

/**
 * GADGET_DRONE_PATIENCE_MS: how long a turn goes on while the server cannot store its events
 * (database or Redis down) before it stops; default 300 000 (5 minutes).
 */
export function patienceMs(): number | undefined {
  const value = Number(process.env.GADGET_DRONE_PATIENCE_MS);
  return Number.isInteger(value) && value >= 1000 ? value : undefined;
}

/**
 * GADGET_DRONE_WORKTREE_RETENTION_DAYS: days an unused session worktree is kept before it is
 * removed (its branch stays); unset: the config's `worktreeRetentionDays`, else 7.
 */
export function worktreeRetentionDays(): number | undefined {
  const value = Number(process.env.GADGET_DRONE_WORKTREE_RETENTION_DAYS);
  return process.env.GADGET_DRONE_WORKTREE_RETENTION_DAYS && value > 0 ? value : undefined;
}

/** GADGET_DRONE_MCP_IDLE_MINUTES: minutes a session's MCP servers run without a turn; unset: the config's, else 10. */
export function mcpIdleMinutes(): number | undefined {
  const value = Number(process.env.GADGET_DRONE_MCP_IDLE_MINUTES);
  return process.env.GADGET_DRONE_MCP_IDLE_MINUTES && value > 0 ? value : undefined;
}

/** GADGET_DRONE_MCP_TIMEOUT_SECONDS: seconds an MCP server may take to start; unset: the config's, else 10. */
export function mcpTimeoutSeconds(): number | undefined {
  const value = Number(process.env.GADGET_DRONE_MCP_TIMEOUT_SECONDS);
  return process.env.GADGET_DRONE_MCP_TIMEOUT_SECONDS && value > 0 ? value : undefined;
}

/** The drone's environment, which MCP stdio servers start from once scrubbed of secrets. */
export function hostEnvironment(): Record<string, string | undefined> {
  return { ...process.env };
}

/** The directories PATH names, in order: where the sandbox looks for bwrap and which toolchains it shows. */
export function searchPath(): string[] {
  return (process.env.PATH ?? "").split(path.delimiter).filter(Boolean);
}

/** What git needs from the drone's environment (credential helpers, proxies), and nothing else. */
const passedToGit = [
  "PATH",
  "HOME",
  "USER",
  "LANG",
  "LC_ALL",
  "SSH_AUTH_SOCK",
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "NO_PROXY",
  "http_proxy",
  "https_proxy",
  "no_proxy",
  "GIT_SSH_COMMAND",
  "GIT_SSH",
  "GIT_ASKPASS",
  "XDG_CONFIG_HOME",
];

/** The drone's own git environment; never prompts for credentials (GIT_TERMINAL_PROMPT=0). */
export function gitEnvironment(): Record<string, string> {
  const environment: Record<string, string> = { GIT_TERMINAL_PROMPT: "0" };
  for (const name of passedToGit) {
    const value = process.env[name];
    if (value !== undefined) environment[name] = value;
  }
  return environment;
}

/** Where systemd looks for the user's units: $XDG_CONFIG_HOME/systemd/user (~/.config/systemd/user). */
export function systemdUserDirectory(): string {
  const base = process.env.XDG_CONFIG_HOME || path.join(homedir(), ".config");
  return path.join(base, "systemd", "user");
}

/** Where launchd looks for the user's agents: ~/Library/LaunchAgents. */
export function launchAgentsDirectory(): string {
  return path.join(homedir(), "Library", "LaunchAgents");
}

/** The PATH a service of the drone gets: the one it was installed from (bwrap, git, toolchains). */
export function servicePath(): string {
  return process.env.PATH || "/usr/local/bin:/usr/bin:/bin";
}

/** The user's login name, for the `loginctl enable-linger` hint. */
export function userName(): string {
  return process.env.USER || process.env.LOGNAME || "$USER";
}

/**
 * GADGET_DRONE_UPDATE_CHECK_MS: how often `start --auto-update` asks its server for a newer
 * package; default 900 000 (15 minutes), at least 200.
 */
export function updateCheckMs(): number {
  const value = Number(process.env.GADGET_DRONE_UPDATE_CHECK_MS);
  return Number.isInteger(value) && value >= 200 ? value : 900_000;
}

/** Set by `start --auto-update` for the drone it runs and restarts after an update. */
export const supervisedVariable = "GADGET_DRONE_SUPERVISED";

/** Whether this process is the drone a `start --auto-update` supervisor runs. */
export function isSupervised(): boolean {
  return process.env[supervisedVariable] === "1";
}
