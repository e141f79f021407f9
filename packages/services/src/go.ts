// Finding the Go toolchain and running it, for the servers the harness builds from the Go module
// proxy (FerretDB, Gitea).
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { which } from "./which.ts";

/** The `go` command on PATH or in Go's default install folder, or null. */
export function findGo(): string | null {
  return which("go") ?? (existsSync("/usr/local/go/bin/go") ? "/usr/local/go/bin/go" : null);
}

/**
 * Runs a command to its end, its standard error passed through; resolves with its standard
 * output when `capture` is set (else that is passed through too), rejects on a non-zero exit.
 */
export function runCommand(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; capture?: boolean },
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ["ignore", options.capture ? "pipe" : "inherit", "inherit"],
    });
    let output = "";
    child.stdout?.on("data", (chunk) => {
      output += String(chunk);
    });
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0
        ? resolve(output)
        : reject(
            new Error(`${path.basename(command)} ${args.join(" ")} failed with exit code ${code}`),
          ),
    );
  });
}
