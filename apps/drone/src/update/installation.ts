// Where an installed gadget-drone lives: <prefix>/lib/gadget-drone/versions/<version>/, with
// `current` naming the version <prefix>/bin/gadget-drone runs (what /install.sh lays out). Updates
// unpack beside it and switch `current`; `previous` keeps the one before, for a rollback.
import { realpathSync } from "node:fs";
import { readlink, rename, rm, symlink } from "node:fs/promises";
import path from "node:path";

export interface Installation {
  /** <prefix>/lib/gadget-drone */
  library: string;
  /** The version this process runs. */
  version: string;
}

/** The installation `command` (the running bin file) belongs to; null when it is none (a checkout, npm). */
export function findInstallation(command: string): Installation | null {
  let real: string;
  try {
    real = realpathSync(command);
  } catch {
    return null;
  }
  const parts = real.split(path.sep);
  const count = parts.length;
  if (
    count < 5 ||
    parts[count - 1] !== "gadget-drone.js" ||
    parts[count - 2] !== "bin" ||
    parts[count - 4] !== "versions"
  ) {
    return null;
  }
  return { library: parts.slice(0, count - 4).join(path.sep), version: parts[count - 3]! };
}

export function versionDirectory(installation: Installation, version: string): string {
  return path.join(installation.library, "versions", version);
}

/** The version `current` names now (another process may have switched it). */
export async function currentVersion(installation: Installation): Promise<string | null> {
  const target = await readlink(path.join(installation.library, "current")).catch(() => null);
  return target ? path.basename(target) : null;
}

/** Points `name` (current, previous) at `version` in one rename: never a moment without it. */
async function pointAt(installation: Installation, name: string, version: string): Promise<void> {
  const link = path.join(installation.library, name);
  const next = `${link}.next-${process.pid}`;
  await rm(next, { force: true });
  await symlink(path.join("versions", version), next);
  await rename(next, link);
}

/** Makes `version` the one that runs; the one before becomes `previous`. */
export async function switchTo(installation: Installation, version: string): Promise<void> {
  const before = await currentVersion(installation);
  if (before && before !== version) await pointAt(installation, "previous", before);
  await pointAt(installation, "current", version);
}

/** Back to `previous` (the version that ran before the last switch); returns it, or null. */
export async function rollBack(installation: Installation): Promise<string | null> {
  const target = await readlink(path.join(installation.library, "previous")).catch(() => null);
  if (!target) return null;
  const version = path.basename(target);
  await pointAt(installation, "current", version);
  return version;
}
