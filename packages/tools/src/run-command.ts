// run_command: the tool face of runCommand (spawn-only commands).
import { defineTool } from "@gadget/agent";
import { z } from "zod";
import { runCommand } from "./command-run.ts";
import { resolveToolsOptions, type ToolsOptions } from "./options.ts";

export const runCommandInput = z.object({
  command: z
    .string()
    .min(1)
    .describe('The command line, e.g. "npm test" or "cd packages/app && npx tsc -p ."'),
  cwd: z
    .string()
    .optional()
    .describe("Directory to run in, relative to the workspace root. Default: the root."),
  timeout_ms: z
    .number()
    .int()
    .positive()
    .optional()
    .describe("Timeout in milliseconds. Default 120000, at most 600000."),
});

/** The run_command tool. */
export function createRunCommandTool(toolOptions: ToolsOptions = {}) {
  const options = resolveToolsOptions(toolOptions);
  return defineTool({
    name: "run_command",
    description: [
      "Runs a program in the workspace (tests, builds, linters, git) and returns its combined output with the exit code.",
      "The command is split into arguments like a shell would (quotes and backslashes work) and spawned directly, WITHOUT a shell:",
      "pipes (|), ||, ;, redirects (< >), background (&), $(…), backticks, $VARIABLES and builtins such as export or source are refused.",
      "Chain steps with && (the chain stops at the first failure); `cd <dir> && <command>` changes directory within the workspace.",
      "Unquoted globs such as src/*.ts are expanded. stdin is closed and CI=1, so nothing can prompt.",
      `Default timeout ${options.commandTimeoutMs / 1000} s (timeout_ms up to ${options.maxCommandTimeoutMs / 1000} s); on timeout the command and its children are killed.`,
      `Long output is cut to its first and last lines (about ${Math.round(options.maxCommandOutputBytes / 1024)} KiB).`,
      "Use read_file, grep, glob and list_dir instead of cat, grep, find and ls.",
    ].join(" "),
    inputSchema: runCommandInput,
    permission: "write",
    timeoutMs: options.maxCommandTimeoutMs + options.killGraceMs + 5_000,
    describe: (input) => `Run \`${input.command}\`${input.cwd ? ` in ${input.cwd}` : ""}`,
    // "Always allow this command": the exact command line, wherever in the workspace it runs.
    standingApproval: (input) => input.command,
    async execute(input, context) {
      const timeoutMs = Math.min(
        input.timeout_ms ?? options.commandTimeoutMs,
        options.maxCommandTimeoutMs,
      );
      const result = await runCommand(input.command, {
        ...options,
        workspace: context.workspace,
        ...(input.cwd === undefined ? {} : { cwd: input.cwd }),
        timeoutMs,
        signal: context.signal,
        ...(context.onOutput ? { onOutput: context.onOutput } : {}),
      });
      const status = result.timedOut
        ? "timed out"
        : result.aborted
          ? "cancelled"
          : result.exitCode === null
            ? "killed"
            : `exit ${result.exitCode}`;
      const shown = input.command.length > 80 ? `${input.command.slice(0, 77)}…` : input.command;
      return {
        ok: result.ok,
        output: result.output,
        summary: `Ran \`${shown}\` (${status})`,
        data: {
          exitCode: result.exitCode,
          timedOut: result.timedOut,
          aborted: result.aborted,
          steps: result.steps,
          notRun: result.notRun,
          truncated: result.truncated,
          durationMs: result.durationMs,
        },
      };
    },
  });
}
