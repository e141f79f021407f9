// Runs a parsed command chain: each step spawned (never a shell) in its own process group, so a
// timeout or an abort ends the step and everything it started.
import { type ChildProcess, spawn } from "node:child_process";
import { constants } from "node:fs";
import { access, stat } from "node:fs/promises";
import path from "node:path";
import { StringDecoder } from "node:string_decoder";
import type { ToolOutputChunk } from "@gadget/agent";
import type { CommandConfinement, Refusal } from "@gadget/sandbox";
import { commandEnvironment } from "./command-env.ts";
import { expandGlob } from "./command-glob.ts";
import { type CommandStep, parseCommand, refuse } from "./command-parse.ts";
import { type Logger, resolveToolsOptions, type ToolsOptions } from "./options.ts";
import { OutputCapture } from "./output-capture.ts";
import { terminateProcessGroup } from "./process-group.ts";
import { redactSecrets } from "./redaction.ts";
import { isInside, resolveInWorkspace, resolveRealPath, toRelative } from "./workspace-path.ts";

export interface RunCommandOptions
  extends Pick<
    ToolsOptions,
    | "deniedCommands"
    | "projectEnv"
    | "secretValues"
    | "env"
    | "killGraceMs"
    | "maxCommandOutputBytes"
    | "maxCommandOutputLines"
    | "maxStreamedOutputBytes"
    | "logger"
    | "sandbox"
  > {
  /** Absolute path of the workspace root. */
  workspace: string;
  /** Directory to start in, relative to the workspace root. Default: the root. */
  cwd?: string;
  /** For the whole chain. Default: 120,000 ms. */
  timeoutMs?: number;
  /** Aborting ends the running step's process group and the chain. */
  signal?: AbortSignal;
  /** Receives output as it arrives (secrets redacted), until maxStreamedOutputBytes. */
  onOutput?: (chunk: ToolOutputChunk) => void;
}

export interface CommandStepResult {
  /** The step as a shell would show it. */
  command: string;
  /** Working directory relative to the workspace root. */
  cwd: string;
  /** Exit code; null when the process was killed by a signal or never started. */
  exitCode: number | null;
  /** Signal that ended the process, if any. */
  signal: string | null;
}

export interface CommandRunResult {
  /** Every step that ran exited with 0 and nothing timed out or was aborted. */
  ok: boolean;
  /** Exit code of the last step that ran (127 when a program was not found). */
  exitCode: number | null;
  timedOut: boolean;
  aborted: boolean;
  steps: CommandStepResult[];
  /** Steps not run because an earlier one failed. */
  notRun: string[];
  /** Head and tail of the combined output, then a status line; what the model reads. */
  output: string;
  /** Whether output was left out of `output`. */
  truncated: boolean;
  durationMs: number;
  /** Connections the sandbox's filtering proxy refused (network "allowlist"). */
  refused: Refusal[];
}

/** Paths outside the workspace that commands may still name. */
const allowedOutsidePaths = new Set([
  "/dev/null",
  "/dev/stdin",
  "/dev/stdout",
  "/dev/stderr",
  "/dev/zero",
  "/dev/random",
  "/dev/urandom",
]);

async function exists(target: string): Promise<boolean> {
  return stat(target).then(
    () => true,
    () => false,
  );
}

/** Refuses an argument that names a path outside the workspace (after `..`, absolutely or through a symlink). */
async function checkArgumentPath(
  root: string,
  cwd: string,
  argument: string,
  stepText: string,
): Promise<void> {
  const candidates = [argument];
  if (argument.startsWith("-") && argument.includes("=")) {
    candidates.push(argument.slice(argument.indexOf("=") + 1));
  }
  for (const candidate of candidates) {
    if (candidate === "" || candidate.length > 4096 || candidate.includes("\n")) continue;
    let target: string;
    if (path.isAbsolute(candidate)) {
      if (allowedOutsidePaths.has(path.normalize(candidate))) continue;
      // "/api/v1" in `grep -r /api/v1 src` is text, not a path: only existing top levels count.
      const top = `/${candidate.split("/").filter(Boolean)[0] ?? ""}`;
      if (!(await exists(top))) continue;
      target = path.normalize(candidate);
    } else {
      target = path.resolve(cwd, candidate);
      if (!isInside(root, target)) {
        refuse(
          `Refused \`${stepText}\`: the argument "${candidate}" points outside the workspace. Commands may only use files inside the workspace; use paths relative to it.`,
        );
      }
    }
    if (!isInside(root, await resolveRealPath(target))) {
      refuse(
        `Refused \`${stepText}\`: the argument "${candidate}" points outside the workspace${path.isAbsolute(candidate) ? "" : " through a symbolic link"}. Commands may only use files inside the workspace; use paths relative to it.`,
      );
    }
  }
}

async function resolveCd(root: string, cwd: string, directory: string, stepText: string) {
  const lexical = path.resolve(cwd, directory);
  const real = await resolveRealPath(lexical);
  if (!isInside(root, lexical) || !isInside(root, real)) {
    refuse(
      `Refused \`${stepText}\`: "${directory}" is outside the workspace. \`cd\` can only move within the workspace; use a path relative to the workspace root (or the cwd parameter).`,
    );
  }
  return real;
}

/** Checks what can be checked before anything runs, so a refused chain runs nothing. */
async function precheck(root: string, start: string, steps: CommandStep[]): Promise<void> {
  let cwd = start;
  for (const step of steps) {
    if (step.kind === "cd") {
      cwd = await resolveCd(root, cwd, step.directory, step.text);
      continue;
    }
    const [program, ...args] = step.words;
    if (program?.value.includes("/") && !path.isAbsolute(program.value)) {
      await checkArgumentPath(root, cwd, program.value, step.text);
    }
    for (const word of args) {
      if (!word.glob) await checkArgumentPath(root, cwd, word.value, step.text);
    }
  }
}

interface SpawnOutcome {
  exitCode: number | null;
  signal: string | null;
  /** Set when the program could not be started. */
  startError?: string;
}

interface StepContext {
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

async function spawnStep(argv: string[], cwd: string, context: StepContext): Promise<SpawnOutcome> {
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

/** One line naming the hosts the sandbox kept the command from, so the model stops retrying them. */
function describeRefusals(refused: readonly Refusal[]): string {
  if (refused.length === 0) return "";
  const hosts = [...new Set(refused.map((refusal) => `${refusal.host}:${refusal.port}`))];
  const reason = refused[0]?.reason ?? "";
  return `[sandbox: refused ${hosts.slice(0, 5).join(", ")}${hosts.length > 5 ? ` and ${hosts.length - 5} more` : ""} — ${reason}. Ask the user to add the host to the project's allowed hosts if the work needs it.]\n`;
}

function describeStatus(
  result: Omit<CommandRunResult, "output" | "truncated" | "refused">,
  timeoutMs: number,
): string {
  const last = result.steps[result.steps.length - 1];
  if (result.timedOut) {
    return `[timed out after ${Math.round(timeoutMs / 1000)} s${last ? ` running \`${last.command}\`` : ""}: its process group was ended (SIGTERM, then SIGKILL). Raise timeout_ms (at most 600000) or run something shorter.]`;
  }
  if (result.aborted) return "[cancelled: the command's process group was ended]";
  if (!last) return "[nothing ran]";
  const code =
    last.exitCode === null
      ? `killed by ${last.signal ?? "a signal"}`
      : `exit code ${last.exitCode}`;
  if (result.ok) return `[${code}]`;
  const notRun =
    result.notRun.length > 0
      ? `; not run: ${result.notRun.map((step) => `\`${step}\``).join(", ")}`
      : "";
  const failed =
    result.steps.length > 1 || result.notRun.length > 0 ? ` — \`${last.command}\` failed` : "";
  return `[${code}${failed}${notRun}]`;
}

/**
 * Runs a command line the way run_command does: parsed into argv, never a shell;
 * `&&` chains stop at the first failure; `cd <dir> &&` moves within the workspace; refusals
 * throw a ToolError before anything runs. Reused by the drone for verification commands.
 * @example
 * const result = await runCommand("cd packages/app && npm test", { workspace: "/work/repo" });
 * if (!result.ok) console.log(result.output);
 */
export async function runCommand(
  command: string,
  options: RunCommandOptions,
): Promise<CommandRunResult> {
  const resolved = resolveToolsOptions(options);
  const logger: Logger | undefined = options.logger;
  const startedAt = Date.now();
  const parsed = parseCommand(command, { deniedCommands: resolved.deniedCommands });
  const start = await resolveInWorkspace(options.workspace, options.cwd ?? ".");
  if (!start.exists || !(await stat(start.absolute)).isDirectory()) {
    refuse(`The working directory "${start.relative}" does not exist or is not a directory.`);
  }
  const root = start.root;
  await precheck(root, start.absolute, parsed.steps);

  const timeoutMs = options.timeoutMs ?? resolved.commandTimeoutMs;
  const env = commandEnvironment(resolved.env, resolved);
  const capture = new OutputCapture({
    maxBytes: resolved.maxCommandOutputBytes,
    maxLines: resolved.maxCommandOutputLines,
  });
  let streamed = 0;
  let streamingStopped = false;
  const emit = (stream: ToolOutputChunk["stream"], raw: string) => {
    if (!raw) return;
    const text = redactSecrets(raw, resolved.secretValues);
    capture.write(text);
    if (!options.onOutput || streamingStopped) return;
    if (streamed + text.length > resolved.maxStreamedOutputBytes) {
      streamingStopped = true;
      options.onOutput({
        stream: "stderr",
        text: `\n[gadget: live output stopped after ${resolved.maxStreamedOutputBytes} characters; the command is still running]\n`,
      });
      return;
    }
    streamed += text.length;
    options.onOutput({ stream, text });
  };

  let timedOut = false;
  let aborted = false;
  let stop: () => void = () => {};
  const stopped = new Promise<void>((resolve) => {
    stop = resolve;
  });
  const timer = setTimeout(() => {
    timedOut = true;
    stop();
  }, timeoutMs);
  const onAbort = () => {
    aborted = true;
    stop();
  };
  if (options.signal?.aborted) onAbort();
  options.signal?.addEventListener("abort", onAbort, { once: true });

  const steps: CommandStepResult[] = [];
  const notRun: string[] = [];
  const refused: Refusal[] = [];
  const execSteps = parsed.steps.filter((step) => step.kind === "exec").length;
  let cwd = start.absolute;
  let failed = false;
  try {
    for (const [index, step] of parsed.steps.entries()) {
      if (failed || timedOut || aborted) {
        if (!timedOut && !aborted)
          notRun.push(...parsed.steps.slice(index).map((rest) => rest.text));
        break;
      }
      if (step.kind === "cd") {
        const next = await resolveCd(root, cwd, step.directory, step.text);
        if (
          !(await stat(next).then(
            (stats) => stats.isDirectory(),
            () => false,
          ))
        ) {
          emit("stderr", `cd: ${step.directory}: No such directory\n`);
          steps.push({ command: step.text, cwd: toRelative(root, cwd), exitCode: 1, signal: null });
          failed = true;
          continue;
        }
        cwd = next;
        continue;
      }
      const argv: string[] = [];
      for (const word of step.words) {
        const matches = word.glob ? await expandGlob(word.glob, cwd) : [];
        if (matches.length > 0) argv.push(...matches);
        else argv.push(word.value);
      }
      for (const argument of argv.slice(1)) await checkArgumentPath(root, cwd, argument, step.text);
      if (execSteps > 1) emit("stdout", `$ ${step.text}\n`);
      logger?.debug({ argv0: argv[0], cwd: toRelative(root, cwd) }, "run_command step");
      const outcome = await spawnStep(argv, cwd, {
        env,
        emit,
        killGraceMs: resolved.killGraceMs,
        stopped,
        sandbox: options.sandbox,
        refused,
      });
      if (outcome.startError) emit("stderr", `${outcome.startError}\n`);
      steps.push({
        command: step.text,
        cwd: toRelative(root, cwd),
        exitCode: outcome.exitCode,
        signal: outcome.signal,
      });
      if (outcome.exitCode !== 0) failed = true;
    }
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener("abort", onAbort);
  }

  // The user watching live sees the refused hosts too, not only the model.
  if (refused.length > 0 && options.onOutput && !streamingStopped) {
    options.onOutput({ stream: "stderr", text: describeRefusals(refused) });
  }
  const last = steps[steps.length - 1];
  const summary = {
    ok: !failed && !timedOut && !aborted,
    exitCode: last?.exitCode ?? null,
    timedOut,
    aborted,
    steps,
    notRun,
    durationMs: Date.now() - startedAt,
  };
  // Redacting again catches a secret that arrived split across two chunks.
  const body =
    capture.length > 0 ? redactSecrets(capture.render(), resolved.secretValues) : "(no output)\n";
  const separator = body.endsWith("\n") ? "" : "\n";
  return {
    ...summary,
    refused,
    output: `${body}${separator}${describeRefusals(refused)}${describeStatus(summary, timeoutMs)}`,
    truncated: capture.truncated,
  };
}
