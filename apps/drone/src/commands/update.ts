// `gadget-drone update [--check]`: the server's drone package, verified and start-checked,
// installed beside the running version and switched to.
import { readdir, rm } from "node:fs/promises";
import path from "node:path";
import { UserError } from "@gadget/protocol";
import { readConfig } from "../config.ts";
import { currentVersion, findInstallation, switchTo } from "../update/installation.ts";
import { fetchPackageInfo, isNewer, stageUpdate } from "../update/package-update.ts";

export interface UpdateOptions {
  config: string;
  /** Only say whether the server hands out a newer version. */
  check: boolean;
  /** The running command (process.argv[1]) and its version. */
  command: string;
  version: string;
}

/** Removes versions other than the current and the previous one: an update keeps one to go back to. */
async function prune(library: string, keep: string[]): Promise<void> {
  const versions = path.join(library, "versions");
  for (const name of await readdir(versions).catch(() => [] as string[])) {
    if (!name.startsWith(".") && !keep.includes(name)) {
      await rm(path.join(versions, name), { recursive: true, force: true });
    }
  }
}

/** Runs the update; returns the lines to print. */
export async function update(options: UpdateOptions): Promise<string> {
  const config = await readConfig(options.config);
  const info = await fetchPackageInfo(config.server);
  const newer = isNewer(info, options.version);
  const installation = findInstallation(options.command);
  if (options.check) {
    return newer
      ? `gadget-drone ${options.version}; ${config.server} hands out ${info.version}: gadget-drone update installs it.`
      : `gadget-drone ${options.version} is up to date (${config.server} hands out ${info.version}).`;
  }
  if (!newer)
    return `gadget-drone ${options.version} is up to date (${config.server} hands out ${info.version}).`;
  if (!installation) {
    throw new UserError(
      "update_unavailable",
      `this gadget-drone runs from ${options.command}, not from an installation /install.sh made; install ${info.version} with: curl -fsSL ${config.server}/install.sh | sh`,
    );
  }
  await stageUpdate(installation, config.server, info);
  const before = (await currentVersion(installation)) ?? options.version;
  await switchTo(installation, info.version);
  await prune(installation.library, [info.version, before]);
  return [
    `Updated gadget-drone ${before} → ${info.version} (verified sha256 ${info.sha256.slice(0, 12)}…, start check passed).`,
    "A drone already running keeps its version until it restarts (gadget-drone start --auto-update switches by itself between turns).",
  ].join("\n");
}
