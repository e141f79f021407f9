// Ending a command's whole process group: SIGTERM, then SIGKILL after a grace period.
import { readdirSync, readFileSync } from "node:fs";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A stat line of /proc, or undefined when the process is gone. */
function procStat(entry: string): string | undefined {
  try {
    return readFileSync(`/proc/${entry}/stat`, "utf8");
  } catch {
    return undefined;
  }
}

/**
 * Whether a process group still has a running member. kill(-pgid, 0) also counts zombies, which
 * linger where PID 1 does not reap orphans (many containers), and for a moment after a sandbox's
 * pid namespace ends, so on Linux /proc is consulted. Synchronously: procfs answers from memory,
 * and a hundred awaited reads cost ~70 ms of thread-pool round trips on each command's exit.
 */
export async function processGroupAlive(pgid: number): Promise<boolean> {
  try {
    process.kill(-pgid, 0);
  } catch {
    return false;
  }
  if (process.platform !== "linux") return true;
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return true;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = procStat(entry);
    if (!stat) continue;
    // "pid (comm) state ppid pgrp …"; comm may hold spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(fields[2]) === pgid && fields[0] !== "Z" && fields[0] !== "X") return true;
  }
  return false;
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // The group is already gone.
  }
}

/**
 * Ends a process group: SIGTERM to all of it, SIGKILL after `graceMs` if anything still runs.
 * Resolves once nothing in the group runs (or shortly after SIGKILL).
 */
export async function terminateProcessGroup(pgid: number, graceMs: number): Promise<void> {
  if (!(await processGroupAlive(pgid))) return;
  signalGroup(pgid, "SIGTERM");
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    await sleep(50);
    if (!(await processGroupAlive(pgid))) return;
  }
  signalGroup(pgid, "SIGKILL");
  const killDeadline = Date.now() + 1_000;
  while (Date.now() < killDeadline && (await processGroupAlive(pgid))) await sleep(20);
}
