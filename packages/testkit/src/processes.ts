// Finding a test's own commands among the machine's processes. A sandboxed command sees its own
// pid namespace, so it cannot report its host pid; tests find it by a word on its command line.
import { readdirSync, readFileSync } from "node:fs";

/** Host pids of running processes whose command line has `word` as one of its arguments. */
export function processesWithArgument(word: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    let commandLine: string;
    let state: string;
    try {
      commandLine = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      state = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue;
    }
    // Zombies linger where nothing reaps them; they run nothing.
    const status = state.slice(state.lastIndexOf(")") + 2, state.lastIndexOf(")") + 3);
    if (status === "Z" || status === "X") continue;
    if (commandLine.split("\0").includes(word)) pids.push(Number(entry));
  }
  return pids;
}

/**
 * A run_command line that writes `marker` (a path relative to the workspace) and waits `ms`;
 * `word` ends its command line, so processesWithArgument(word) finds it from outside.
 * @example const command = waitingCommand("long.started", 60_000, "gadget-wait-long");
 */
export function waitingCommand(marker: string, ms: number, word: string): string {
  return `node -e "require('fs').writeFileSync('${marker}', 'started'); setTimeout(() => {}, ${ms})" ${word}`;
}
