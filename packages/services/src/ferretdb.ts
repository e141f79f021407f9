// Builds (once, cached by source hash) the FerretDB v1 test server from tools/ferretdb, with the
// files under tools/ferretdb/patches laid over FerretDB's sources (vendored for the build).
import { createHash } from "node:crypto";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
} from "node:fs";
import { homedir, tmpdir } from "node:os";
import path from "node:path";
import { findGo, runCommand } from "./go.ts";

/**
 * Where the binary for the current tools/ferretdb sources lives (it may not be built yet).
 * The cache sits outside the checkout (default ~/.cache/gadget-code/bin) so a fresh clone on the
 * same machine, as CI makes, reuses it.
 */
export function ferretdbBinaryPath(
  rootDir: string,
  cacheDir = path.join(homedir(), ".cache", "gadget-code", "bin"),
): string {
  const sourceDir = path.join(rootDir, "tools", "ferretdb");
  const hash = createHash("sha256");
  for (const file of ["go.mod", "go.sum", "main.go", ...patchFiles(sourceDir)]) {
    const full = path.join(sourceDir, file);
    if (existsSync(full)) hash.update(file).update(readFileSync(full));
  }
  return path.join(cacheDir, `ferretdb-${hash.digest("hex").slice(0, 12)}`);
}

/**
 * Returns the path of a built FerretDB binary, building it with `go build` when missing.
 * Returns null when Go is not installed.
 */
export async function ensureFerretdb(
  rootDir: string,
  log: (line: string) => void,
): Promise<string | null> {
  const binary = ferretdbBinaryPath(rootDir);
  if (existsSync(binary)) return binary;
  const go = findGo();
  if (!go) return null;
  mkdirSync(path.dirname(binary), { recursive: true });
  log(`building FerretDB v1 (once; cached at ${binary})…`);
  const started = Date.now();
  const sourceDir = path.join(rootDir, "tools", "ferretdb");
  const env = { ...process.env, CGO_ENABLED: process.env.CGO_ENABLED ?? "0" };
  // Build to a temporary name and rename, so a concurrent or interrupted build never leaves half a binary.
  const output = `${binary}.partial-${process.pid}`;
  const buildDir = mkdtempSync(path.join(tmpdir(), "gadget-ferretdb-"));
  try {
    await vendorWithPatches(go, sourceDir, buildDir, env);
    await runCommand(go, ["build", "-mod=vendor", "-o", output, "."], { cwd: buildDir, env });
  } finally {
    rmSync(buildDir, { recursive: true, force: true });
  }
  renameSync(output, binary);
  log(`FerretDB built in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return binary;
}

/** Files under tools/ferretdb/patches, as paths relative to tools/ferretdb. */
function patchFiles(sourceDir: string): string[] {
  const patches = path.join(sourceDir, "patches");
  if (!existsSync(patches)) return [];
  return readdirSync(patches, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".go"))
    .map((entry) => path.relative(sourceDir, path.join(entry.parentPath, entry.name)))
    .sort();
}

/**
 * Copies the module to `buildDir`, vendors its dependencies there and lays each patches/<path>
 * over the FerretDB module's <path> in vendor/ (Go refuses overlays of files in its module cache).
 */
async function vendorWithPatches(
  go: string,
  sourceDir: string,
  buildDir: string,
  env: NodeJS.ProcessEnv,
): Promise<void> {
  for (const file of ["go.mod", "go.sum", "main.go"]) {
    copyFileSync(path.join(sourceDir, file), path.join(buildDir, file));
  }
  await runCommand(go, ["mod", "vendor"], { cwd: buildDir, env });
  const moduleDir = path.join(buildDir, "vendor", "github.com", "FerretDB", "FerretDB");
  for (const patch of patchFiles(sourceDir)) {
    const target = path.join(moduleDir, path.relative("patches", patch));
    if (!existsSync(target)) throw new Error(`tools/ferretdb/${patch} patches no file of FerretDB`);
    copyFileSync(path.join(sourceDir, patch), target);
  }
}
