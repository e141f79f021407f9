// The drone package this server hands out: one .tgz of its own release, read once at start so its
// sha256 and size are known before the first install asks.
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import path from "node:path";
import { SystemError } from "@gadget/protocol";

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

/** Hashes the package; its version is in its name (`npm pack` names it so). */
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
