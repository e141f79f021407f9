// What to do about an MCP server's failure when its cause is the sandbox rather than the server:
// a package runner that cannot download without a network, a program the sandbox does not show
// (its /tmp is private, the home directory hidden), a data file in a read-only folder.
import { stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { WorkOrderMcpServer } from "@gadget/protocol";
import type { McpTurnRequest } from "./mcp-turn.ts";

/** Failures of a download: the sandbox's network refused, or npm's offline cache had nothing. */
const downloadFailure = /ENOTCACHED|EAI_AGAIN|ENOTFOUND|ENETUNREACH|ECONNREFUSED|only-if-cached/;
/** A program or module that was not found. */
const notFound = /ENOENT|Cannot find module|No such file|not found/i;
/** Programs that fetch a package when they start. */
const packageRunners = new Set(["npx", "bunx", "uvx", "pnpx", "pipx", "dlx"]);

function isWithin(parent: string, candidate: string): boolean {
  const relative = path.relative(parent, candidate);
  return relative === "" || (!relative.startsWith("..") && !path.isAbsolute(relative));
}

/** Where the sandbox shows nothing of the drone's machine, and why, for a path there. */
function privatePlace(target: string): string | null {
  for (const directory of new Set(["/tmp", "/var/tmp", "/dev/shm", os.tmpdir()])) {
    if (isWithin(directory, target)) return `${directory} is private in the sandbox`;
  }
  const home = os.homedir();
  if (home && home !== "/" && isWithin(home, target)) {
    return "the drone user's home is hidden in the sandbox (only toolchains on PATH show)";
  }
  return null;
}

/**
 * A sentence on what to change when a stdio server failed to start for a reason of the sandbox,
 * from `failure` (the cause and the server's stderr); null when none applies.
 */
export async function startHint(
  server: WorkOrderMcpServer,
  request: McpTurnRequest,
  failure: string,
): Promise<string | null> {
  const argv = server.command;
  if (!argv || argv.length === 0) return null;
  const runner = path.basename(argv[0] as string);
  const fetches = packageRunners.has(runner) || (runner === "pnpm" && argv[1] === "dlx");
  if (fetches && (request.network ?? "none") === "none" && downloadFailure.test(failure)) {
    return `The project's network is "No network", so \`${runner}\` cannot download the server: install it on the drone (e.g. npm install -g) or commit it to the repository and run it with node, or allow the registry's host in the project's network settings`;
  }
  if (!notFound.test(failure)) return null;
  for (const arg of argv) {
    if (!path.isAbsolute(arg)) continue;
    if (isWithin(request.workspace, arg) || isWithin(request.programDirectory, arg)) continue;
    const place = privatePlace(arg);
    if (!place) continue;
    if (!(await stat(arg).catch(() => null))) continue;
    return `${arg} exists on the drone but not inside the sandbox (${place}): install the server in a system directory or the repository, or add its directory to the drone config's sandbox.readOnlyPaths`;
  }
  return null;
}

/** A sentence for a tool that failed writing into a read-only folder (EROFS); null otherwise. */
export function readOnlyHint(text: string): string | null {
  if (!/EROFS|read-only file system/i.test(text)) return null;
  return "(The server tried to write where the sandbox is read-only: it starts in the project's default-branch checkout, shown read-only. Point its data file into the session's worktree or home with an absolute path, e.g. MEMORY_FILE_PATH for the memory server.)";
}
