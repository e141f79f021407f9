// Runs a turn's project hooks for the engine (TurnHooks): each matching hook is spawned in the
// turn's sandbox like run_command (same confinement, network and environment) with the event as
// JSON on stdin, killed after its timeout, and told as one `hook` run record.
import type { HookInvocation, HookVerdict, TurnHooks } from "@gadget/agent";
import {
  DEFAULT_HOOK_TIMEOUT_MS,
  type Hook,
  type HookAnswer,
  type HookEventData,
  type HookEventName,
  type HooksConfig,
  hookAnswerSchema,
} from "@gadget/protocol";
import { type CommandConfinement, spawnConfined } from "@gadget/sandbox";
import { commandEnvironment, redactSecrets } from "@gadget/tools";
import { fromCommittedCopy } from "./committed-programs.ts";

/** Bytes of stdout and of stderr kept per hook run; the rest is dropped. */
const maxCapturedBytes = 64 * 1024;
/** Characters of a hook's output shown in its `hook` event. */
const maxShownOutput = 2_000;
/** Between SIGTERM and SIGKILL to a hook that ran out of time. */
const killGraceMs = 500;

export interface HookRunnerOptions {
  hooks: HooksConfig;
  /** The turn's sandbox: every hook runs inside it, as run_command does. */
  confinement: CommandConfinement;
  /** Real path of the session's worktree: each hook's working directory. */
  directory: string;
  /** What every hook is told of the turn (`turn` on its stdin). */
  turn: { id: string; session: string; project: string };
  /** Values kept out of the hooks' environment and out of what their output shows. */
  secretValues: readonly string[];
  projectEnv: Readonly<Record<string, string>>;
  /** The host environment hooks take PATH, HOME, LANG… from (as commands do). */
  hostEnv: Readonly<Record<string, string | undefined>>;
  /** `.gadget/` as committed when the turn started (committed-programs.ts); null: none. */
  committedCopy?: string | null;
}

interface Ran {
  exitCode: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  startError?: string;
}

/** Whether a hook of a tool event is for `tool`: its matcher is a regular expression on the whole name. */
function matches(hook: Hook, tool: string | undefined): boolean {
  if (hook.matcher === undefined || tool === undefined) return true;
  return new RegExp(`^(?:${hook.matcher})$`).test(tool);
}

/** A string capped at `maxCapturedBytes` as it arrives. */
function collector() {
  let text = "";
  return {
    add(chunk: Buffer) {
      if (text.length < maxCapturedBytes)
        text += chunk.toString("utf8").slice(0, maxCapturedBytes - text.length);
    },
    get text() {
      return text;
    },
  };
}

/** The turn's hooks, run in its sandbox. */
export class SandboxHooks implements TurnHooks {
  constructor(private readonly options: HookRunnerOptions) {}

  has(event: HookEventName, tool?: string): boolean {
    return (this.options.hooks[event] ?? []).some((hook) => matches(hook, tool));
  }

  async run(invocation: HookInvocation, { signal }: { signal: AbortSignal }): Promise<HookVerdict> {
    const verdict: HookVerdict = { runs: [] };
    const contexts: string[] = [];
    let params = invocation.params;
    for (const hook of this.options.hooks[invocation.event] ?? []) {
      if (!matches(hook, invocation.tool)) continue;
      if (signal.aborted) break;
      const started = performance.now();
      // A later PreToolUse hook sees what an earlier one made of the call.
      const ran = await this.spawn(hook, { ...invocation, params }, signal);
      const record = this.record(hook, invocation, ran, Math.round(performance.now() - started));
      verdict.runs.push(record.data);
      if (record.blocked !== undefined) {
        verdict.blocked = record.blocked;
        break;
      }
      const answer = record.answer;
      if (answer?.params && invocation.event === "PreToolUse") {
        params = answer.params;
        verdict.params = answer.params;
      }
      if (record.context) contexts.push(record.context);
    }
    if (contexts.length > 0) verdict.context = contexts.join("\n");
    return verdict;
  }

  /** What one run came to: its `hook` event, and a block, new params or context. */
  private record(
    hook: Hook,
    invocation: HookInvocation,
    ran: Ran,
    ms: number,
  ): { data: HookEventData; blocked?: string; answer?: HookAnswer; context?: string } {
    const secrets = this.options.secretValues;
    const stdout = redactSecrets(ran.stdout, secrets);
    const stderr = redactSecrets(ran.stderr, secrets);
    const timeoutMs = hook.timeoutMs ?? DEFAULT_HOOK_TIMEOUT_MS;
    const base = {
      event: invocation.event,
      command: redactSecrets(hook.command.join(" "), secrets),
      ms,
      ...(invocation.callId ? { callId: invocation.callId } : {}),
      ...(invocation.tool ? { tool: invocation.tool } : {}),
    };
    const shown = (text: string) => text.trim().slice(-maxShownOutput);
    if (ran.timedOut)
      return {
        data: {
          ...base,
          ok: false,
          outcome: "timeout",
          output: `killed after ${timeoutMs} ms without finishing; the turn went on without it${stderr.trim() ? `\n${shown(stderr)}` : ""}`,
        },
      };
    if (ran.startError !== undefined)
      return { data: { ...base, ok: false, outcome: "failed", output: ran.startError } };
    if (ran.exitCode === 2) {
      const reason = (stderr.trim() || stdout.trim()).slice(0, 20_000);
      return {
        data: { ...base, ok: true, outcome: "blocked", output: shown(reason) },
        blocked: reason,
      };
    }
    if (ran.exitCode !== 0)
      return {
        data: {
          ...base,
          ok: false,
          outcome: "failed",
          output: `exit code ${ran.exitCode ?? "none"}${stderr.trim() || stdout.trim() ? `: ${shown(stderr.trim() || stdout)}` : ""}`,
        },
      };
    const text = stdout.trim();
    if (text.startsWith("{")) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      const answer = hookAnswerSchema.safeParse(parsed);
      if (!answer.success)
        return {
          data: {
            ...base,
            ok: false,
            outcome: "failed",
            output: `its output is not the JSON a hook answers with ({"params"?: {…}, "context"?: "…"}): ${shown(text)}`,
          },
        };
      const rewrote = answer.data.params !== undefined && invocation.event === "PreToolUse";
      const context = answer.data.context?.trim() || undefined;
      return {
        data: {
          ...base,
          ok: true,
          outcome: rewrote ? "rewrote" : context ? "context" : "continue",
          output: shown(rewrote ? JSON.stringify(answer.data.params) : (context ?? stderr)),
        },
        answer: answer.data,
        ...(context ? { context } : {}),
      };
    }
    // Plain text on stdout is context where context is read after the fact.
    const context =
      text && (invocation.event === "SessionStart" || invocation.event === "PostToolUse")
        ? text.slice(0, 20_000)
        : undefined;
    return {
      data: {
        ...base,
        ok: true,
        outcome: context ? "context" : "continue",
        output: shown(text || stderr),
      },
      ...(context ? { context } : {}),
    };
  }

  /** Spawns one hook confined, writes the event to its stdin, waits for it or its timeout. */
  private async spawn(hook: Hook, invocation: HookInvocation, signal: AbortSignal): Promise<Ran> {
    const { options } = this;
    const stdout = collector();
    const stderr = collector();
    let confined: Awaited<ReturnType<typeof spawnConfined>>;
    try {
      confined = await spawnConfined(options.confinement, {
        argv: fromCommittedCopy(hook.command, options.committedCopy ?? null),
        cwd: options.directory,
        env: {
          ...commandEnvironment(options.hostEnv, {
            projectEnv: options.projectEnv,
            secretValues: options.secretValues,
          }),
          GADGET_HOOK_EVENT: invocation.event,
        },
      });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return {
        exitCode: null,
        stdout: "",
        stderr: "",
        timedOut: false,
        startError: `could not start ${hook.command[0]}: ${message}`,
      };
    }
    const { child } = confined;
    child.stdout.on("data", (chunk: Buffer) => stdout.add(chunk));
    child.stderr.on("data", (chunk: Buffer) => stderr.add(chunk));
    // A hook that does not read its stdin must not fail the write.
    child.stdin.on("error", () => undefined);
    child.stdin.end(`${JSON.stringify({ ...invocation, turn: options.turn })}\n`);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      void confined.stop(killGraceMs);
    }, hook.timeoutMs ?? DEFAULT_HOOK_TIMEOUT_MS);
    const onAbort = () => void confined.stop(killGraceMs);
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      const exit = await confined.exited;
      // The output pipes may still hold the last bytes when `exit` fires.
      // (A process that inherited them and outlived the hook is not waited for long.)
      await Promise.race([
        Promise.all(
          [child.stdout, child.stderr].map(
            (stream) =>
              new Promise<void>((resolve) => {
                if (stream.readableEnded || stream.destroyed) resolve();
                else stream.once("close", () => resolve());
              }),
          ),
        ),
        new Promise<void>((resolve) => setTimeout(resolve, 1_000).unref()),
      ]);
      return { exitCode: exit.code, stdout: stdout.text, stderr: stderr.text, timedOut };
    } finally {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
    }
  }
}
