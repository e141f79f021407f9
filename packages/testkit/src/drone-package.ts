// Drone packages for tests of installing and updating: the real one packed by
// scripts/pack-drone.sh (under any version number), and a broken one that cannot start.
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

/**
 * Packs this checkout's drone as `gadget-drone-<version>.tgz` into `outDir`; returns its path.
 * @example const tarball = packDrone(await makeTempDir("packages-"), "0.2.0");
 */
export function packDrone(outDir: string, version?: string): string {
  const output = execFileSync("bash", [path.join(repoRoot, "scripts", "pack-drone.sh"), outDir], {
    env: { ...process.env, ...(version ? { GADGET_DRONE_VERSION: version } : {}) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  return output.toString().trim().split("\n").pop() ?? "";
}

/**
 * A `gadget-drone-<version>.tgz` shaped like the real one that is broken, as a package built wrong
 * would be: its command fails at once (exit 1), or with `failsAt: "start"` it answers `--version`
 * (its start check passes) and only `start` fails. What an update must refuse or roll back from.
 */
export function packBrokenDrone(
  outDir: string,
  version: string,
  options: { failsAt?: "load" | "start" } = {},
): string {
  const staging = path.join(outDir, `.broken-${version}`);
  mkdirSync(path.join(staging, "package", "bin"), { recursive: true });
  writeFileSync(
    path.join(staging, "package", "package.json"),
    `${JSON.stringify({ name: "gadget-drone", version, type: "module", bin: { "gadget-drone": "./bin/gadget-drone.js" } })}\n`,
  );
  writeFileSync(
    path.join(staging, "package", "bin", "gadget-drone.js"),
    options.failsAt === "start"
      ? `#!/usr/bin/env node\nif (process.argv.includes("--version")) console.log(${JSON.stringify(version)});\nelse { console.error("this gadget-drone build cannot start"); process.exit(1); }\n`
      : '#!/usr/bin/env node\nthrow new Error("this gadget-drone build is broken");\n',
    { mode: 0o755 },
  );
  const tarball = path.join(outDir, `gadget-drone-${version}.tgz`);
  execFileSync("tar", ["-C", staging, "-czf", tarball, "package"]);
  return tarball;
}
