// Builds this checkout's drone package when the cached one is missing or older than its sources,
// so `gadget-code serve` (and `pnpm start`) always hand out the drone of the code they run.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

/** What the package is built from; a change in any of them makes the cached one stale. */
const sources = [
  "apps/drone/src",
  "apps/drone/bin",
  "apps/drone/scripts",
  "apps/drone/package.json",
];

function newestChange(target: string): number {
  if (!existsSync(target)) return 0;
  const stat = statSync(target);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const entry of readdirSync(target)) {
    if (entry === "node_modules" || entry.endsWith(".test.ts")) continue;
    newest = Math.max(newest, newestChange(path.join(target, entry)));
  }
  return newest;
}

function sourcesChangedAt(rootDir: string): number {
  const packages = path.join(rootDir, "packages");
  const shared = existsSync(packages)
    ? readdirSync(packages).map((name) => path.join("packages", name, "src"))
    : [];
  return Math.max(
    ...[...sources, ...shared].map((source) => newestChange(path.join(rootDir, source))),
  );
}

export interface EnsureDronePackageOptions {
  /** The repository checkout (with scripts/pack-drone.sh). */
  rootDir: string;
  /** Where built packages are kept between starts. */
  cacheDir: string;
  log: (line: string) => void;
}

/**
 * The path of an up-to-date `gadget-drone-<version>.tgz` in `cacheDir`, built with
 * scripts/pack-drone.sh when needed; null when this is no checkout to build from.
 */
export async function ensureDronePackage(
  options: EnsureDronePackageOptions,
): Promise<string | null> {
  const script = path.join(options.rootDir, "scripts", "pack-drone.sh");
  const manifest = path.join(options.rootDir, "apps", "drone", "package.json");
  if (!existsSync(script) || !existsSync(manifest)) return null;
  const version = String(JSON.parse(readFileSync(manifest, "utf8")).version);
  const cached = path.join(options.cacheDir, `gadget-drone-${version}.tgz`);
  if (existsSync(cached) && statSync(cached).mtimeMs >= sourcesChangedAt(options.rootDir)) {
    return cached;
  }
  mkdirSync(options.cacheDir, { recursive: true });
  options.log(`building the drone package ${version} for /install.sh…`);
  const output = await new Promise<string>((resolve, reject) => {
    const child = spawn("bash", [script, options.cacheDir], {
      cwd: options.rootDir,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    child.once("error", reject);
    child.once("exit", (code) =>
      code === 0
        ? resolve(stdout.trim().split("\n").pop() ?? "")
        : reject(new Error(`building the drone package failed (exit ${code}): ${stderr.trim()}`)),
    );
  });
  return output || cached;
}
