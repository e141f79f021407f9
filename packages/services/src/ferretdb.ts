// Builds (once, cached by source hash) the FerretDB v1 test server from tools/ferretdb.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";
import { which } from "./which.ts";

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
  for (const file of ["go.mod", "go.sum", "main.go"]) {
    const full = path.join(sourceDir, file);
    if (existsSync(full)) hash.update(readFileSync(full));
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
  const go = which("go") ?? (existsSync("/usr/local/go/bin/go") ? "/usr/local/go/bin/go" : null);
  if (!go) return null;
  mkdirSync(path.dirname(binary), { recursive: true });
  log(`building FerretDB v1 (once; cached at ${binary})…`);
  const started = Date.now();
  await new Promise<void>((resolve, reject) => {
    // Build to a temporary name and rename, so a concurrent or interrupted build never leaves half a binary.
    const child = spawn(go, ["build", "-o", `${binary}.partial-${process.pid}`, "."], {
      cwd: path.join(rootDir, "tools", "ferretdb"),
      stdio: ["ignore", "inherit", "inherit"],
      env: { ...process.env, CGO_ENABLED: process.env.CGO_ENABLED ?? "0" },
    });
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0
        ? resolve()
        : reject(new Error(`go build of tools/ferretdb failed with exit code ${code}`)),
    );
  });
  renameSync(`${binary}.partial-${process.pid}`, binary);
  log(`FerretDB built in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return binary;
}
