import { stat } from "node:fs/promises";
import type { ToolOutputChunk } from "@gadget/agent";
import type { Refusal } from "@gadget/sandbox";
import { refuse } from "./command-argv.ts";
import { commandEnvironment } from "./command-env.ts";
import { expandGlob } from "./command-glob.ts";
import { parseCommand } from "./command-parse.ts";
import { checkArgumentPath, precheck, resolveCd } from "./command-paths.ts";
import { spawnStep } from "./command-spawn.ts";
import { type Logger, resolveToolsOptions, type ToolsOptions } from "./options.ts";
import { OutputCapture } from "./output-capture.ts";
import { redactSecrets } from "./redaction.ts";
import { resolveInWorkspace, toRelative } from "./workspace-path.ts";

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
