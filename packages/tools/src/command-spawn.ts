// Spawns one step of a command chain: the program found the way execvp would (a missing one is
// reported before any sandbox starts), in its own process group so a timeout or an abort ends the
// step and everything it started.
import { type ChildProcess, spawn } from "node:child_process";
import { constants } from "node:fs";
import { access, stat } from "node:fs/promises";
import path from "node:path";
import { StringDecoder } from "node:string_decoder";
import type { ToolOutputChunk } from "@gadget/agent";
import type { CommandConfinement, Refusal } from "@gadget/sandbox";
import { terminateProcessGroup } from "./process-group.ts";

export interface SpawnOutcome {
  exitCode: number | null;
  signal: string | null;
  /** Set when the program could not be started. */
  startError?: string;
}

export interface StepContext {
  env: Record<string, string>;
  emit: (stream: ToolOutputChunk["stream"], text: string) => void;
  killGraceMs: number;
  /** Resolves when the chain must stop (timeout or abort). */
  stopped: Promise<void>;
  /** Confines the step; without it the step runs as the drone's user. */
  sandbox?: CommandConfinement | undefined;
  /** Connections the sandbox's proxy refused, across the chain. */
  refused: Refusal[];
}

/** Finds a program the way execvp would, so a missing one is reported before any sandbox starts. */
async function locateProgram(
  name: string,
  cwd: string,
  searchPath: string,
): Promise<{ found: true } | { found: false; error: string; exitCode: number }> {
  const candidates = name.includes("/")
    ? [path.resolve(cwd, name)]
    : searchPath
        .split(path.delimiter)
        .filter((directory) => path.isAbsolute(directory))
        .map((directory) => path.join(directory, name));
  let present = false;
  for (const candidate of candidates) {
    const stats = await stat(candidate).catch(() => null);
    if (!stats?.isFile()) continue;
    present = true;
    if (
      await access(candidate, constants.X_OK).then(
        () => true,
        () => false,
      )
    )
      return { found: true };
  }
  if (present) {
    return {
      found: false,
      exitCode: 126,
      error: `permission denied: ${name} is not executable. Run it through its interpreter (e.g. \`bash ${name}\`, \`node ${name}\`) or make it executable first.`,
    };
  }
  return {
    found: false,
    exitCode: 127,
    error: `command not found: ${name}. ${name.includes("/") ? "No such file." : "It is not on PATH;"} Commands run without a shell, so only programs (not aliases or builtins) can run.`,
  };
}

export async function spawnStep(
  argv: string[],
  cwd: string,
  context: StepContext,
): Promise<SpawnOutcome> {
  if (!context.sandbox) return spawnProcess(argv, cwd, context.env, context);
  const located = await locateProgram(argv[0] as string, cwd, context.env.PATH ?? "");
  if (!located.found)
    return { exitCode: located.exitCode, signal: null, startError: located.error };
  // Never unconfined: if the sandbox cannot wrap the step, the step does not run.
  const prepared = await context.sandbox.prepare({ argv, cwd, env: context.env });
  try {
    const outcome = await spawnProcess(prepared.argv, cwd, prepared.env, context);
    if (outcome.startError) {
      outcome.startError = `the sandbox could not start (${prepared.argv[0]}): ${outcome.startError.split(".")[0]}; the command did not run.`;
    }
    return outcome;
  } finally {
    const report = await prepared.finish();
    context.refused.push(...report.refused);
  }
}

function spawnProcess(
  argv: string[],
  cwd: string,
  env: Record<string, string>,
  context: StepContext,
): Promise<SpawnOutcome> {
  return new Promise((resolve) => {
    let child: ChildProcess;
    try {
      child = spawn(argv[0] as string, argv.slice(1), {
        cwd,
        env,
        stdio: ["ignore", "pipe", "pipe"],
        detached: true,
        shell: false,
        windowsHide: true,
      });
    } catch (error) {
      resolve({ exitCode: 127, signal: null, startError: (error as Error).message });
      return;
    }
    const decoders = { stdout: new StringDecoder("utf8"), stderr: new StringDecoder("utf8") };
    for (const stream of ["stdout", "stderr"] as const) {
      child[stream]?.on("data", (chunk: Buffer) =>
        context.emit(stream, decoders[stream].write(chunk)),
      );
    }
    const closed = new Promise<void>((resolveClosed) => child.on("close", () => resolveClosed()));
    let settled = false;
    const pid = child.pid;
    const finish = (outcome: SpawnOutcome) => {
      if (settled) return;
      settled = true;
      for (const stream of ["stdout", "stderr"] as const) {
        const rest = decoders[stream].end();
        if (rest) context.emit(stream, rest);
      }
      resolve(outcome);
    };
    child.on("error", (error: NodeJS.ErrnoException) => {
      // With a pid the program started; later errors (e.g. a failed kill) change nothing.
      if (pid !== undefined) return;
      const name = argv[0] as string;
      const message =
        error.code === "ENOENT"
          ? `command not found: ${name}. ${name.includes("/") ? "No such file." : "It is not on PATH;"} Commands run without a shell, so only programs (not aliases or builtins) can run.`
          : error.code === "EACCES"
            ? `permission denied: ${name} is not executable. Run it through its interpreter (e.g. \`bash ${name}\`, \`node ${name}\`) or make it executable first.`
            : `could not start ${name}: ${error.message}`;
      finish({ exitCode: error.code === "EACCES" ? 126 : 127, signal: null, startError: message });
    });
    child.on("exit", (code, signal) => {
      // Whatever the step left running in its group is ended before the step counts as done.
      const leftovers =
        pid !== undefined ? terminateProcessGroup(pid, context.killGraceMs) : Promise.resolve();
      void leftovers.then(async () => {
        // A process that left the group (setsid) may still hold the pipes; do not wait for it.
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          closed,
          new Promise((resolveLater) => (timer = setTimeout(resolveLater, 500))),
        ]);
        clearTimeout(timer);
        child.stdout?.destroy();
        child.stderr?.destroy();
        finish({ exitCode: code, signal });
      });
    });
    void context.stopped.then(() => {
      if (pid !== undefined && !settled) void terminateProcessGroup(pid, context.killGraceMs);
    });
  });
}
