// A detached watchdog that stops the servers a process started once that process is gone,
// so a crashed or SIGKILLed test run leaves no orphans.
import { type ChildProcess, spawn } from "node:child_process";

// The parent's death is read as the end of the watchdog's stdin, a pipe only the parent holds: the
// kernel closes it the moment the parent exits. Polling the parent's pid cannot tell a dead parent
// from its zombie, and an init that reaps late (as on our CI machines) keeps a zombie for seconds.
// Each pid leads its own process group (every caller spawns detached): the group is signalled and
// watched, since a wrapper (tsx, pnpm) may be gone while the program it started still runs. A
// server can also be named by its command line, so its watchdog starts before it does: a parent
// killed between starting the server and its watchdog would otherwise leave the server behind.
const watchdog = `
const fs = require("node:fs");
const pids = JSON.parse(process.argv[1]);
const commandLines = JSON.parse(process.argv[2]);
// Processes whose whole command line is one of commandLines (Linux's /proc; none elsewhere).
const marked = () => {
  if (commandLines.length === 0) return [];
  const found = [];
  let entries = [];
  try { entries = fs.readdirSync("/proc"); } catch { return found; }
  for (const entry of entries) {
    if (!/^[0-9]+$/.test(entry)) continue;
    try {
      const line = fs.readFileSync("/proc/" + entry + "/cmdline", "utf8").split("\\0").filter(Boolean).join(" ");
      if (commandLines.includes(line)) found.push(Number(entry));
    } catch {}
  }
  return found;
};
// A pid comes round again within minutes here (Linux's pid_max of 32768 against a suite's thousands
// of git and sandbox processes): it is ours only while the process holding it is the one that held
// it when first seen (its start time in /proc). One whose leader has ended may still have a group
// left to end: no new process is given a pid still in use as a group's id.
const linux = fs.existsSync("/proc/self/stat");
const startOf = (pid) => {
  try {
    const stat = fs.readFileSync("/proc/" + pid + "/stat", "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? null;
  } catch { return null; }
};
const started = new Map();
const remember = (pid) => { if (!started.has(pid)) started.set(pid, startOf(pid)); };
const ours = (pid) => {
  if (!linux) return true;
  const now = startOf(pid);
  return now === null || now === started.get(pid);
};
for (const pid of pids) remember(pid);
const signal = (pid, name) => {
  if (!ours(pid)) return false;
  try { process.kill(-pid, name); return true; } catch {}
  try { process.kill(pid, name); return true; } catch { return false; }
};
let seen = false;
const timer = setInterval(() => {
  // Named processes are looked for until one is seen; then their pids are watched like the others.
  if (!seen) for (const pid of marked()) if (!pids.includes(pid)) { remember(pid); pids.push(pid); }
  const alive = pids.some((pid) => signal(pid, 0));
  if (alive) seen = true;
  else if (seen) process.exit(0);
}, 500);
let reaping = false;
const reap = () => {
  if (reaping) return;
  reaping = true;
  clearInterval(timer);
  const targets = [...pids, ...marked()];
  for (const pid of targets) { remember(pid); signal(pid, "SIGTERM"); }
  setTimeout(() => {
    for (const pid of [...targets, ...marked()]) { remember(pid); signal(pid, "SIGKILL"); }
    process.exit(0);
  }, 3000);
};
process.stdin.on("data", () => {});
process.stdin.on("end", reap);
process.stdin.on("close", reap);
process.stdin.on("error", reap);
`;

/**
 * The command line the watchdog looks for: the arguments joined by spaces, as /proc shows them
 * (an empty argument, such as redis-server's `--save ""`, leaves no trace there).
 * @example startReaper([], [commandLineOf("redis-server", ["--port", "6380"])]);
 */
export function commandLineOf(command: string, args: readonly string[]): string {
  return [command, ...args].filter((part) => part !== "").join(" ");
}

// Held for the life of this process: each watchdog's stdin must stay open until it ends.
const watchdogs = new Set<ChildProcess>();

/**
 * Starts the watchdog for `pids` (process group leaders) and the processes whose whole command line
 * is one of `commandLines` (arguments joined by spaces), tied to the life of this process.
 */
export function startReaper(pids: number[], commandLines: string[] = []): void {
  const args = [JSON.stringify(pids), JSON.stringify(commandLines)];
  const child = spawn(process.execPath, ["-e", watchdog, ...args], {
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
