// Fetching the server's drone package for an update: its metadata, the .tgz checked against the
// sha256 and size the server gives, unpacked beside the running version, and made to pass its own
// start check before anything switches to it.
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import {
  compareVersions,
  type DronePackageInfo,
  dronePackageInfoSchema,
  parseOrThrow,
  UserError,
} from "@gadget/protocol";
import { type Installation, versionDirectory } from "./installation.ts";

function run(
  file: string,
  args: string[],
  timeoutMs: number,
): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: timeoutMs }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
      resolve({ code, output: `${stdout}${stderr}`.trim() });
    });
  });
}

/** `GET <server>/downloads/gadget-drone.json`. */
export async function fetchPackageInfo(server: string): Promise<DronePackageInfo> {
  const url = `${server.replace(/\/+$/, "")}/downloads/gadget-drone.json`;
  const response = await fetch(url, { signal: AbortSignal.timeout(30_000) }).catch(
    (error: Error) => {
      throw new UserError("server_unreachable", `${url}: ${error.message}`);
    },
  );
  if (!response.ok) {
    throw new UserError(
      "update_unavailable",
      `${url} answered ${response.status}: the server hands out no drone package`,
    );
  }
  return parseOrThrow(dronePackageInfoSchema, await response.json(), "drone package description");
}

/** Whether `info` is newer than `version`. */
export function isNewer(info: DronePackageInfo, version: string): boolean {
  return compareVersions(info.version, version) > 0;
}

/** Where a refused version is remembered, with why. */
export function refusalFile(installation: Installation, version: string): string {
  return path.join(installation.library, "versions", `.refused-${version}`);
}

/** Why `version` was refused before (it failed its check), or null: it is not tried again. */
export async function refusedBefore(
  installation: Installation,
  version: string,
): Promise<string | null> {
  return readFile(refusalFile(installation, version), "utf8").catch(() => null);
}

/** The start check: the unpacked command runs and says it is `version`. */
async function startCheck(directory: string, version: string): Promise<string | null> {
  const bin = path.join(directory, "bin", "gadget-drone.js");
  if (!existsSync(bin)) return "it has no bin/gadget-drone.js";
  const outcome = await run(process.execPath, [bin, "--version"], 30_000);
  if (outcome.code !== 0) {
    return `\`gadget-drone --version\` failed (exit ${outcome.code}): ${outcome.output.split("\n").slice(0, 3).join(" ")}`;
  }
  if (outcome.output !== version)
    return `it says it is ${outcome.output || "nothing"}, not ${version}`;
  return null;
}

/**
 * Downloads, verifies, unpacks and checks `info`'s package beside the running version; resolves
 * with its directory. A package that fails verification or its start check is removed, remembered
 * as refused, and rejected with `update_refused` saying why.
 */
export async function stageUpdate(
  installation: Installation,
  server: string,
  info: DronePackageInfo,
): Promise<string> {
  const versions = path.join(installation.library, "versions");
  const target = versionDirectory(installation, info.version);
  const work = path.join(versions, `.staging-${info.version}-${process.pid}`);
  await rm(work, { recursive: true, force: true });
  await mkdir(work, { recursive: true });
  try {
    // From the server the drone is registered with, whatever host the metadata names.
    const fileName = info.url.slice(info.url.lastIndexOf("/") + 1);
    const url = `${server.replace(/\/+$/, "")}/downloads/${fileName}`;
    const response = await fetch(url, { signal: AbortSignal.timeout(120_000) });
    if (!response.ok)
      throw new UserError("update_unavailable", `${url} answered ${response.status}`);
    const bytes = Buffer.from(await response.arrayBuffer());
    const sha256 = createHash("sha256").update(bytes).digest("hex");
    if (sha256 !== info.sha256 || bytes.length !== info.size) {
      throw new UserError(
        "update_refused",
        `gadget-drone ${info.version}: the package's sha256 is ${sha256} (${bytes.length} bytes), the server says ${info.sha256} (${info.size} bytes)`,
      );
    }
    const tarball = path.join(work, fileName);
    await writeFile(tarball, bytes);
    const unpacked = await run("tar", ["-xzf", tarball, "-C", work], 60_000);
    if (unpacked.code !== 0) {
      throw new UserError(
        "update_refused",
        `gadget-drone ${info.version} does not unpack: ${unpacked.output}`,
      );
    }
    const problem = await startCheck(path.join(work, "package"), info.version);
    if (problem) {
      await writeFile(
        refusalFile(installation, info.version),
        `it failed its start check: ${problem}\n`,
      );
      throw new UserError(
        "update_refused",
        `gadget-drone ${info.version} failed its start check (${problem}); staying on ${installation.version}`,
      );
    }
    await rm(target, { recursive: true, force: true });
    await rename(path.join(work, "package"), target);
    return target;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
