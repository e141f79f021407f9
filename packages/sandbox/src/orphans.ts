// Sandboxes a drone left behind. bwrap dies with the drone (--die-with-parent), except in the
// moment between the drone spawning it and bwrap arming that signal; a drone killed in that
// moment leaves a sandbox with no one to time it out. The next start of the drone ends it.
import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";

/** The tag of a drone's sandboxes: derived from its runtime directory, so it survives restarts. */
export function sandboxTag(runtimeDirectory: string): string {
  return createHash("sha256").update(runtimeDirectory).digest("hex").slice(0, 16);
}

/**
 * Kills every process whose command line carries `--setenv GADGET_SANDBOX <tag>` (a sandbox of
 * this drone, or the launcher about to exec one). Call before the drone runs any command.
 * @example const ended = await endOrphanedSandboxes(sandboxTag(runtimeDirectory));
 */
export async function endOrphanedSandboxes(tag: string): Promise<number> {
  if (process.platform !== "linux") return 0;
  let ended = 0;
  for (const entry of await readdir("/proc").catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const argv = (await readFile(`/proc/${entry}/cmdline`, "utf8").catch(() => "")).split("\0");
    const marker = argv.indexOf("GADGET_SANDBOX");
    if (marker < 1 || argv[marker - 1] !== "--setenv" || argv[marker + 1] !== tag) continue;
    try {
      process.kill(Number(entry), "SIGKILL");
      ended++;
    } catch {
      // Gone already.
    }
  }
  return ended;
}
