// `start --auto-update` run by a person or a service: a small parent that runs the drone from the
// installation's `current` version and starts it again after it switched to an update (exit 75).
// A new version that stops with an error right after the switch is rolled back, and remembered.
import { spawn } from "node:child_process";
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
  for (;;) {
    const bin = path.join(installation.library, "current", "bin", "gadget-drone.js");
    const startedAt = Date.now();
    // Its own process group: a Ctrl-C reaches the drone once, through this parent.
    const child = spawn(process.execPath, [bin, "start", ...args], {
      stdio: "inherit",
      detached: true,
      env: { ...hostEnvironment(), [supervisedVariable]: "1" },
    });
    let signalled = false;
    const forward = (signal: NodeJS.Signals) => {
      signalled = true;
      child.kill(signal);
    };
    process.on("SIGINT", forward);
    process.on("SIGTERM", forward);
    const code = await new Promise<number>((resolve) => {
      child.once("exit", (exitCode, signal) => resolve(exitCode ?? (signal ? 1 : 0)));
      child.once("error", () => resolve(1));
    });
    process.off("SIGINT", forward);
    process.off("SIGTERM", forward);
    if (code === restartForUpdate && !signalled) {
      switched = true;
      say(`update: starting gadget-drone ${(await currentVersion(installation)) ?? "?"}`);
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
