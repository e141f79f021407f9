// Builds the web IDE when apps/web/dist is missing or older than what it is built from.
import { spawn } from "node:child_process";
import { closeSync, existsSync, openSync, readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

/** What the web build reads; a change in any of these makes the build stale. */
const sources = [
  "apps/web/src",
  "apps/web/index.html",
  "apps/web/public",
  "apps/web/vite.config.ts",
  "apps/web/package.json",
  "packages/protocol/src",
];

function newestChange(target: string): number {
  if (!existsSync(target)) return 0;
  const stat = statSync(target);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const entry of readdirSync(target)) {
    newest = Math.max(newest, newestChange(path.join(target, entry)));
  }
  return newest;
}

/** True when the build is missing or a source changed after it was made. */
export function webBuildIsStale(rootDir: string): boolean {
  const index = path.join(rootDir, "apps/web/dist/index.html");
  if (!existsSync(index)) return true;
  const built = statSync(index).mtimeMs;
  return sources.some((source) => newestChange(path.join(rootDir, source)) > built);
}

/**
 * Runs `vite build` for apps/web with the launcher's environment `env`, its output in `logFile`;
 * rejects with a message on failure.
 */
export async function buildWeb(
  rootDir: string,
  logFile: string,
  env: NodeJS.ProcessEnv,
): Promise<void> {
  const webDir = path.join(rootDir, "apps/web");
  const require = createRequire(path.join(webDir, "package.json"));
  const vite = path.join(path.dirname(require.resolve("vite/package.json")), "bin/vite.js");
  const log = openSync(logFile, "a");
  const child = spawn(process.execPath, [vite, "build"], {
    cwd: webDir,
    stdio: ["ignore", log, log],
    env: { ...env, NODE_ENV: "production" },
  });
  closeSync(log);
  const code = await new Promise<number | null>((resolve) => {
    child.once("exit", resolve);
    child.once("error", () => resolve(null));
  });
  if (code !== 0) throw new Error(`the web IDE build failed (exit ${code}); see ${logFile}`);
}
