// What the MCP form says about a stdio server's command: an example and help that work with the
// project's network setting, and warnings for what cannot work in the sandbox (a package runner
// without a network, a program in /tmp or a home directory, server-memory's read-only default).
import type { NetworkMode } from "@gadget/protocol";

/** Programs that download a package when they start. */
const packageRunners = new Set(["npx", "bunx", "uvx", "pnpx", "pipx"]);

/** A command that works with `network`, shown as the field's placeholder. */
export function commandExample(network: NetworkMode): string {
  return network === "none"
    ? "node tools/mcp-server.mjs   or   mcp-server-filesystem"
    : "npx -y @modelcontextprotocol/server-memory";
}

/** The help under the command field for `network`. */
export function commandHelp(network: NetworkMode): string {
  const where =
    "It runs in the sandbox, started in the default-branch checkout (read-only), and sees the system's directories, toolchains on the drone's PATH and the repository; /tmp and home directories are private there.";
  if (network === "none") {
    return `No network: \`npx -y …\` cannot download a server. Run one committed to the repository (node tools/mcp-server.mjs) or installed on the drone (npm install -g @modelcontextprotocol/server-filesystem, then mcp-server-filesystem). ${where}`;
  }
  if (network === "allowlist") {
    return `\`npx -y …\` downloads the server when it starts: add registry.npmjs.org to the allowed hosts. ${where}`;
  }
  return where;
}

function isPrivatePath(arg: string): boolean {
  return /^(~|\/tmp\/|\/var\/tmp\/|\/dev\/shm\/|\/home\/|\/root\/|\/Users\/)/.test(arg);
}

/**
 * What cannot work about a command (`argv`, with variables `envNames`) with `network`, one
 * sentence each.
 */
export function commandWarnings(
  argv: readonly string[],
  envNames: readonly string[],
  network: NetworkMode,
): string[] {
  if (argv.length === 0) return [];
  const warnings: string[] = [];
  const runner = (argv[0] as string).split("/").pop() ?? "";
  const fetches = packageRunners.has(runner) || (runner === "pnpm" && argv[1] === "dlx");
  if (fetches && network === "none") {
    warnings.push(
      `${runner} downloads the server when it starts, and this project has no network: it fails unless the package is already in the project's cache. Install the server on the drone or commit it to the repository, or allow the registry in the network setting.`,
    );
  }
  const hidden = argv.find(isPrivatePath);
  if (hidden) {
    warnings.push(
      `${hidden} is outside what the sandbox shows (its /tmp and home directories are private): install the server in a system directory or the repository, or add its directory to the drone config's sandbox.readOnlyPaths.`,
    );
  }
  const memoryFile = envNames.includes("MEMORY_FILE_PATH");
  if (argv.some((arg) => /server-memory/.test(arg)) && !memoryFile) {
    warnings.push(
      "server-memory keeps its data next to its own program by default, which is read-only in the sandbox (EROFS): set MEMORY_FILE_PATH to an absolute path in the worktree or the project's home.",
    );
  }
  return warnings;
}
