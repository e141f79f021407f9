// The verification phase of a turn: the project's verify commands run in the sandbox like
// `run_command`, and when they fail, repair passes of the engine that have the failure as their goal.
import type { TurnInput, TurnOutcome } from "@gadget/agent";
import {
  type AgentEvent,
  agentEvent,
  type ExitReason,
  type IChatMessage,
  splitThinking,
} from "@gadget/protocol";
import type { CommandConfinement } from "@gadget/sandbox";
import { runCommand } from "@gadget/tools";
import type { TurnScope } from "./scope.ts";

const maxVerificationOutput = 8_000;

/** How a turn's commands run: confined, with its secrets kept out of their output. */
export interface VerificationSettings {
  confinement: CommandConfinement;
  secretValues: string[];
  /** Per-command timeout; default 300 000 ms. */
  timeoutMs?: number | undefined;
}

/** Whether verification passed, its report for a repair pass, and the event that ends it. */
export interface Verification {
  ok: boolean;
  report: string;
  event: Extract<AgentEvent, { type: "verification" }>["data"];
}

/** What `done` says: why the turn ended, and the passes and cost of all its engine runs. */
export interface RunsTally {
  reason: ExitReason;
  passes: number;
  totalCost: number;
}

/** How the turn's engine runs: its input in the worktree, and one run of the engine on an input. */
export interface EngineRuns {
  input: () => TurnInput;
  run: (input: TurnInput) => Promise<TurnOutcome>;
}

/**
 * Runs the engine, then verifies; failed verification gets up to `repairAttempts` repair passes
 * (default 2). `tally` adds up every run's passes and cost as they end, so a failure part-way
 * still reports them.
 */
export async function runAndVerify(
  scope: TurnScope,
  settings: VerificationSettings & { repairAttempts?: number | undefined },
  directory: string,
  engine: EngineRuns,
  tally: RunsTally,
  signal: AbortSignal,
): Promise<Verification | null> {
  const { order, emit } = scope;
  let result = await engine.run(engine.input());
  Object.assign(tally, {
    reason: result.reason,
    passes: result.passes,
    totalCost: result.totalCost,
  });

  let verified = await verify(scope, settings, directory, result, signal);
  for (
    let attempt = 1;
    verified && !verified.ok && attempt <= (settings.repairAttempts ?? 2);
    attempt++
  ) {
    if (signal.aborted) break;
    emit(
      agentEvent("status", {
        phase: "verification",
        message: `Verification failed; repair pass ${attempt}`,
      }),
    );
    const repair = repairInput(engine.input(), order.context, result, verified.report);
    result = await engine.run(repair);
    Object.assign(tally, {
      reason: result.reason,
      passes: tally.passes + result.passes,
      totalCost: tally.totalCost + result.totalCost,
    });
    verified = await verify(scope, settings, directory, result, signal, attempt);
  }
  return verified;
}

/**
 * Runs the project's verify commands in order, stopping at the first failure; null when there
 * are none or the turn ended in a way that leaves nothing to verify.
 */
export async function verify(
  { order, emit }: TurnScope,
  settings: VerificationSettings,
  directory: string,
  result: TurnOutcome,
  signal: AbortSignal,
  repairPasses = 0,
): Promise<Verification | null> {
  const commands = order.project.verifyCommands ?? [];
  if (
    commands.length === 0 ||
    signal.aborted ||
    result.reason === "cancelled" ||
    result.reason === "approval_needed"
  ) {
    return null;
  }
  const results: Array<{ command: string; exitCode: number | null; output: string }> = [];
  for (const command of commands) {
    emit(agentEvent("status", { phase: "verification", message: `Verifying: ${command}` }));
    const run = await runCommand(command, {
      workspace: directory,
      timeoutMs: settings.timeoutMs ?? 300_000,
      signal,
      secretValues: settings.secretValues,
      projectEnv: order.project.env,
      sandbox: settings.confinement,
    });
    results.push({
      command,
      exitCode: run.exitCode,
      output: run.output.slice(-maxVerificationOutput),
    });
    if (!run.ok) break;
  }
  const ok = results.length === commands.length && results.every((entry) => entry.exitCode === 0);
  const report = results
    .map((entry) => `$ ${entry.command}\n(exit code ${entry.exitCode ?? "none"})\n${entry.output}`)
    .join("\n\n");
  return { ok, report, event: { ok, commands: results, repairPasses } };
}

/**
 * A further loop after failed verification: the turn so far is history, the failure the goal.
 * `input` is the turn's engine input (engine-input.ts); pure, like it.
 */
export function repairInput(
  input: TurnInput,
  context: readonly IChatMessage[],
  previous: TurnOutcome,
  report: string,
): TurnInput {
  const history: IChatMessage[] = [
    ...context,
    ...previous.messages
      .filter(
        (message) =>
          message.role === "user" || (message.role === "assistant" && !message.toolCalls?.length),
      )
      .map((message) => ({
        createdAt: message.createdAt,
        role: message.role,
        content: splitThinking(message.content).content,
      })),
  ];
  return {
    ...input,
    goal: `The project's verification commands failed after your changes. Fix the cause, then answer briefly.\n\n${report}`,
    history,
  };
}
