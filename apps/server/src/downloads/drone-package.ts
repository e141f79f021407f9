// The drone package this server hands out: one .tgz of its release, or the newest of a directory
// of them (dropping a new one in releases it to every `gadget-drone update`). Each file is hashed
// once; its sha256 is what installs and updates check.
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import { compareVersions, SystemError } from "@gadget/protocol";

export interface DronePackage {
  /** The .tgz on disk. */
  file: string;
  /** Its file name, `gadget-drone-<version>.tgz`: the path it is served under. */
  fileName: string;
  version: string;
  /** Hex sha256 of the file. */
  sha256: string;
  size: number;
}

const fileNamePattern = /^gadget-drone-([0-9][0-9A-Za-z.+-]*)\.tgz$/;

/** Hashes the package; its version is in its name (as scripts/pack-drone.sh names it). */
export async function readDronePackage(file: string): Promise<DronePackage> {
  const fileName = path.basename(file);
  const version = fileNamePattern.exec(fileName)?.[1];
  if (!version) {
    throw new SystemError(
      "internal",
      `${file}: a drone package is named gadget-drone-<version>.tgz`,
    );
  }
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return { file, fileName, version, sha256: hash.digest("hex"), size: (await stat(file)).size };
}

/** The package to hand out now: `source` itself, or the newest version in the directory `source`. */
export class DronePackages {
  private readonly hashed = new Map<string, DronePackage>();

  constructor(private readonly source: string | null) {}

  async current(): Promise<DronePackage | null> {
    if (!this.source) return null;
    const found = await stat(this.source).catch(() => null);
    if (!found) return null;
    let file = this.source;
    if (found.isDirectory()) {
      const versions = (await readdir(this.source))
        .map((name) => ({ name, version: fileNamePattern.exec(name)?.[1] }))
        .filter((entry): entry is { name: string; version: string } => Boolean(entry.version))
        .sort((a, b) => compareVersions(b.version, a.version));
      if (!versions[0]) return null;
      file = path.join(this.source, versions[0].name);
    }
    const { mtimeMs, size } = await stat(file);
    const key = `${file}:${mtimeMs}:${size}`;
    let known = this.hashed.get(key);
    if (!known) {
      known = await readDronePackage(file);
      this.hashed.set(key, known);
    }
    return known;
  }
}
