// A detached watchdog that stops the servers a process started once that process is gone,
// so a crashed or SIGKILLed test run leaves no orphans.
import { spawn } from "node:child_process";

const watchdog = `
const [parent, ...pids] = process.argv.slice(1).map(Number);
const alive = (pid) => { try { process.kill(pid, 0); return true; } catch { return false; } };
const timer = setInterval(() => {
  if (!pids.some(alive)) process.exit(0);
  if (alive(parent)) return;
  clearInterval(timer);
  for (const pid of pids) if (alive(pid)) process.kill(pid, "SIGTERM");
  setTimeout(() => { for (const pid of pids) if (alive(pid)) process.kill(pid, "SIGKILL"); process.exit(0); }, 3000);
}, 500);
`;

/** Starts the watchdog for `pids`, tied to the life of `parentPid`. */
export function startReaper(parentPid: number, pids: number[]): void {
  const child = spawn(process.execPath, ["-e", watchdog, String(parentPid), ...pids.map(String)], {
    detached: true,
    stdio: "ignore",
  });
  child.unref();
}
