// A long-lived confined process with stdio pipes (an MCP server): spawned through the turn's
// sandbox in its own process group, and ended with everything it started.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import type { CommandConfinement, CommandSpec } from "./sandbox.ts";

/** A running confined process; `stop` ends its whole process group and releases the sandbox. */
export interface ConfinedProcess {
  readonly child: ChildProcessWithoutNullStreams;
  /** Resolves once the process has exited, with its code or signal. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM to the group, SIGKILL after `graceMs` (default 2000); then the sandbox is released. */
  stop(graceMs?: number): Promise<void>;
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // The group is already gone.
  }
}

/**
 * Starts `command` confined by the turn's policy, stdin/stdout/stderr piped. Rejects when the
 * sandbox cannot wrap it or the program cannot be started.
 * @example const server = await spawnConfined(confinement, { argv: ["node", "mcp.mjs"], cwd, env });
 */
export async function spawnConfined(
  confinement: CommandConfinement,
  command: CommandSpec,
): Promise<ConfinedProcess> {
  const prepared = await confinement.prepare(command);
  let child: ChildProcessWithoutNullStreams;
  try {
    child = spawn(prepared.argv[0] as string, prepared.argv.slice(1), {
      cwd: command.cwd,
      env: prepared.env,
      stdio: ["pipe", "pipe", "pipe"],
      // Its own group, so stopping it ends what it started (the sandbox's pid namespace does too).
      detached: true,
      shell: false,
      windowsHide: true,
    });
  } catch (error) {
    await prepared.finish();
    throw error;
  }
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }));
    child.once("error", () => {
      if (child.pid === undefined) resolve({ code: 127, signal: null });
    });
  });
  await new Promise<void>((resolve, reject) => {
    child.once("spawn", () => resolve());
    child.once("error", (error) => reject(error));
  }).catch(async (error) => {
    await prepared.finish();
    throw error;
  });
  const pid = child.pid as number;
  let released: Promise<void> | null = null;
  const release = () => {
    released ??= prepared.finish().then(() => undefined);
    return released;
  };
  void exited.then(() => {
    // Whatever it left behind in its group ends with it.
    signalGroup(pid, "SIGKILL");
    return release();
  });
  return {
    child,
    exited,
    async stop(graceMs = 2000) {
      child.stdin.end();
      signalGroup(pid, "SIGTERM");
      let timer: NodeJS.Timeout | undefined;
      const killed = await Promise.race([
        exited.then(() => false),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(true), graceMs);
        }),
      ]);
      clearTimeout(timer);
      if (killed) {
        signalGroup(pid, "SIGKILL");
        await exited;
      }
      await release();
    },
  };
}
