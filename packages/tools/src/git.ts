// Runs git for the tools' own needs (snapshots, status), spawned without a shell.
import { spawn } from "node:child_process";
import { SystemError } from "@gadget/protocol";
import { type HardenedGit, hardenedGit } from "@gadget/sandbox";

export interface GitResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout was cut at maxOutputBytes and git was stopped. */
  truncated: boolean;
}

export interface GitOptions {
  cwd: string;
  /**
   * The whole environment git starts from instead of this process's (the drone passes only what
   * git needs). Default: this process's.
   */
  environment?: Record<string, string>;
  /** Variables added to that environment (e.g. GIT_INDEX_FILE). */
  env?: Record<string, string>;
  /** Stops reading (and ends git) after this many bytes of stdout. Default: unlimited. */
  maxOutputBytes?: number;
  /** Written to git's standard input (e.g. `update-index --index-info`). Default: none. */
  input?: string;
  signal?: AbortSignal;
  /**
   * The hardened settings read for `cwd` by the caller, shared by the calls of one step (a turn's
   * add, commit and push): the repository's config is read once, not once per call. Default: read.
   */
  hardened?: HardenedGit;
}

/** Settings that keep the user's configuration from changing what the tools read. */
const stableConfig = [
  "-c",
  "core.quotePath=false",
  "-c",
  "diff.noprefix=false",
  "-c",
  "diff.mnemonicPrefix=false",
  "-c",
  "color.ui=false",
];

/**
 * Runs `git <args>` and collects its output. Nothing the repository configured runs: every call
 * carries the overrides of `hardenedGit` (hooks, fsmonitor, filters, drivers, helpers off).
 * @example
 * const { stdout } = await runGit(["rev-parse", "HEAD"], { cwd: workspace });
 */
export async function runGit(args: readonly string[], options: GitOptions): Promise<GitResult> {
  const env: Record<string, string | undefined> = {
    // biome-ignore lint/style/noProcessEnv: git runs with the host's environment, as any child would.
    ...(options.environment ?? process.env),
    GIT_OPTIONAL_LOCKS: "0",
    GIT_TERMINAL_PROMPT: "0",
    LC_ALL: "C",
    ...options.env,
  };
  const hardened = options.hardened ?? (await hardenedGit(options.cwd, env));
  const config = hardened.config.flatMap((entry) => ["-c", entry]);
  return new Promise((resolve, reject) => {
    const child = spawn("git", [...stableConfig, ...config, ...args], {
      cwd: options.cwd,
      env: { ...env, ...hardened.env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    // Nothing to say: stdin ends at once, as "ignore" would.
    child.stdin.on("error", () => {});
    child.stdin.end(options.input ?? "");
    const chunks: Buffer[] = [];
    let length = 0;
    let truncated = false;
    let stderr = "";
    const max = options.maxOutputBytes ?? Number.POSITIVE_INFINITY;
    const onAbort = () => child.kill("SIGKILL");
    options.signal?.addEventListener("abort", onAbort, { once: true });
    child.stdout.on("data", (chunk: Buffer) => {
      if (truncated) return;
      if (length + chunk.length > max) {
        chunks.push(chunk.subarray(0, max - length));
        length = max;
        truncated = true;
        child.kill("SIGKILL");
        return;
      }
      chunks.push(chunk);
      length += chunk.length;
    });
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk: string) => {
      if (stderr.length < 8192) stderr += chunk;
    });
    child.on("error", (error: NodeJS.ErrnoException) => {
      options.signal?.removeEventListener("abort", onAbort);
      reject(
        error.code === "ENOENT"
          ? new SystemError(
              "unavailable",
              "git is not installed or not on PATH; it is needed for workspace snapshots.",
            )
          : error,
      );
    });
    child.on("close", (code) => {
      options.signal?.removeEventListener("abort", onAbort);
      if (options.signal?.aborted) {
        reject(options.signal.reason);
        return;
      }
      resolve({ code, stdout: Buffer.concat(chunks).toString("utf8"), stderr, truncated });
    });
  });
}

/** Runs git and throws (with git's message) unless it exits with 0. */
export async function gitOrThrow(args: readonly string[], options: GitOptions): Promise<string> {
  const result = await runGit(args, options);
  if (result.code !== 0 && !result.truncated) {
    throw new SystemError(
      "internal",
      `git ${args[0]} failed (exit ${result.code}): ${result.stderr.trim().slice(0, 500)}`,
    );
  }
  return result.stdout;
}
