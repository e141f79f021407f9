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
