// A detached watchdog that stops the servers a process started once that process is gone,
// so a crashed or SIGKILLed test run leaves no orphans.
import { type ChildProcess, spawn } from "node:child_process";

// The parent's death is read as the end of the watchdog's stdin, a pipe only the parent holds: the
// kernel closes it the moment the parent exits. Polling the parent's pid cannot tell a dead parent
// from its zombie, and an init that reaps late (as on our CI machines) keeps a zombie for seconds.
// Each pid leads its own process group (every caller spawns detached): the group is signalled and
// watched, since a wrapper (tsx, pnpm) may be gone while the program it started still runs.
const watchdog = `
const pids = process.argv.slice(1).map(Number);
const signal = (pid, name) => {
  try { process.kill(-pid, name); return true; } catch {}
  try { process.kill(pid, name); return true; } catch { return false; }
};
const timer = setInterval(() => {
  if (!pids.some((pid) => signal(pid, 0))) process.exit(0);
}, 500);
let reaping = false;
const reap = () => {
  if (reaping) return;
  reaping = true;
  clearInterval(timer);
  for (const pid of pids) signal(pid, "SIGTERM");
  setTimeout(() => { for (const pid of pids) signal(pid, "SIGKILL"); process.exit(0); }, 3000);
};
process.stdin.on("data", () => {});
process.stdin.on("end", reap);
process.stdin.on("close", reap);
process.stdin.on("error", reap);
`;

// Held for the life of this process: each watchdog's stdin must stay open until it ends.
const watchdogs = new Set<ChildProcess>();

/** Starts the watchdog for `pids` (process group leaders), tied to the life of this process. */
export function startReaper(pids: number[]): void {
  const child = spawn(process.execPath, ["-e", watchdog, ...pids.map(String)], {
    detached: true,
    stdio: ["pipe", "ignore", "ignore"],
  });
  watchdogs.add(child);
  child.on("exit", () => watchdogs.delete(child));
  child.on("error", () => watchdogs.delete(child));
  child.stdin?.on("error", () => {
    // The watchdog ended first (its servers are gone): nothing to tell it.
  });
  // Neither the watchdog nor its pipe keeps this process alive.
  (child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  child.unref();
}
