// `start --auto-update` run by a person or a service: a small parent that runs the drone from the
// installation's `current` version and starts it again after it switched to an update (exit 75).
// A new version that stops with an error right after the switch is rolled back, and remembered.
import { type ChildProcess, spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { hostEnvironment, supervisedVariable } from "../env.ts";
import { currentVersion, type Installation, rollBack } from "./installation.ts";
import { refusalFile } from "./package-update.ts";

/** The exit code of a drone that switched to an update and wants to be started again. */
export const restartForUpdate = 75;

/** How long after a switch an error exit counts as the new version failing to start. */
const startWindowMs = 60_000;

export async function supervise(
  installation: Installation,
  args: string[],
  say: (line: string) => void,
): Promise<number> {
  let switched = false;
  let child: ChildProcess | null = null;
  let signalled = false;
  const forward = (signal: NodeJS.Signals) => {
    signalled = true;
    child?.kill(signal);
  };
  // For the whole run, and left in place as the process exits: a signal still on its way (a
  // Ctrl-C that pnpm passes on a moment later) meets them rather than the default action.
  process.on("SIGINT", forward);
  process.on("SIGTERM", forward);
  for (;;) {
    const bin = path.join(installation.library, "current", "bin", "gadget-drone.js");
    const startedAt = Date.now();
    // Its own process group: a Ctrl-C reaches the drone once, through this parent.
    const started = spawn(process.execPath, [bin, "start", ...args], {
      stdio: "inherit",
      detached: true,
      env: { ...hostEnvironment(), [supervisedVariable]: "1" },
    });
    child = started;
    const code = await new Promise<number>((resolve) => {
      started.once("exit", (exitCode, signal) => resolve(exitCode ?? (signal ? 1 : 0)));
      started.once("error", () => resolve(1));
    });
    child = null;
    if (code === restartForUpdate && !signalled) {
      switched = true;
      const next = await currentVersion(installation);
      // Stopped between the two: nothing to start.
      if (signalled) return 0;
      say(`update: starting gadget-drone ${next ?? "?"}`);
      continue;
    }
    if (code !== 0 && switched && !signalled && Date.now() - startedAt < startWindowMs) {
      const failed = await currentVersion(installation);
      const back = await rollBack(installation);
      if (back && failed && back !== failed) {
        await writeFile(
          refusalFile(installation, failed),
          `it stopped at start (exit ${code}) and was rolled back to ${back}\n`,
        ).catch(() => {});
        say(
          `update: gadget-drone ${failed} stopped at start (exit ${code}); rolled back to ${back}`,
        );
        switched = false;
        continue;
      }
    }
    return code;
  }
}

/**
 * In the supervised drone: when its supervisor is gone (killed outright), stop as after one
 * SIGTERM (finish running turns), instead of running on unwatched.
 */
export function stopWithSupervisor(): void {
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid !== parent) {
      clearInterval(timer);
      process.kill(process.pid, "SIGTERM");
    }
  }, 1_000);
  timer.unref();
}
