// Builds (once, cached by source hash) the FerretDB v1 test server from tools/ferretdb.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { which } from "./which.ts";

/** Where the binary for the current tools/ferretdb sources lives (it may not be built yet). */
export function ferretdbBinaryPath(rootDir: string): string {
  const sourceDir = path.join(rootDir, "tools", "ferretdb");
  const hash = createHash("sha256");
  for (const file of ["go.mod", "go.sum", "main.go"]) {
    const full = path.join(sourceDir, file);
    if (existsSync(full)) hash.update(readFileSync(full));
  }
  return path.join(rootDir, ".gadget", "bin", `ferretdb-${hash.digest("hex").slice(0, 12)}`);
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
  log(`building FerretDB v1 (once; cached at ${path.relative(rootDir, binary)})…`);
  const started = Date.now();
  await new Promise<void>((resolve, reject) => {
    const child = spawn(go, ["build", "-o", binary, "."], {
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
  log(`FerretDB built in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return binary;
}
