// Runs one work order on this machine: lock the project's checkout, prepare it, snapshot it, run
// the agent loop with the tools, report the changes, verify, and end with `done`. Every event is
// journaled and streamed until the server has it.
import path from "node:path";
import {
  ApprovalChannel,
  type ApprovalDecision,
  type EngineLogger,
  runTurn,
  type TurnInput,
  type TurnOptions,
  type TurnOutcome,
  type TurnState,
} from "@gadget/agent";
import {
  type AgentEvent,
  agentEvent,
  type ExitReason,
  type IChatMessage,
  type IWorkOrder,
  splitThinking,
} from "@gadget/protocol";
import {
  changesSince,
  createTools,
  runCommand,
  snapshotWorkspace,
  workspaceContextSources,
} from "@gadget/tools";
import type { EventJournal, TurnJournal } from "./streaming/journal.ts";
import { type DroneSocket, EventSender } from "./streaming/sender.ts";
import { acquireLock, type WorkspaceLock } from "./workspace/lock.ts";
import { prepareWorkspace } from "./workspace/prepare.ts";

/** What a person watching the drone's terminal sees of a turn. */
export interface TurnProgress {
  turnId: string;
  project: string;
  pass: number;
  tool: string | null;
  tokens: number;
  cost: number;
  startedAt: number;
  phase: string;
  /** The latest status message (e.g. "Receiving objects 45%"). */
  detail?: string;
}

export interface TurnRunnerSettings {
  workspaceRoot: string;
  journal: EventJournal;
  socket: DroneSocket;
  logger: EngineLogger;
  /** Values never to reach a command's environment or output (the drone's credential). */
  secretValues: string[];
  /** Repair passes the loop gets when verification fails; default 2. */
  verifyRepairAttempts?: number;
  /** Per-command timeout for verification; default 300 000 ms. */
  verifyTimeoutMs?: number;
  /** Engine knobs (tests shrink delays). */
  tunables?: TurnOptions["tunables"];
  onProgress?: (progress: TurnProgress) => void;
  onFinished?: (turnId: string) => void;
}

const maxDiffBytes = 200_000;
const maxVerificationOutput = 8_000;

/** A turn this drone is running. */
export class ActiveTurn {
  readonly abort = new AbortController();
  readonly approvals = new ApprovalChannel();
  readonly progress: TurnProgress;
  readonly finished: Promise<void>;
  private sender!: EventSender;
  private journal!: TurnJournal;
  private checkpointInFlight: Promise<void> = Promise.resolve();

  constructor(
    readonly order: IWorkOrder,
    private readonly settings: TurnRunnerSettings,
  ) {
    this.progress = {
      turnId: order.turnId,
      project: order.project.name,
      pass: 0,
      tool: null,
      tokens: 0,
      cost: 0,
      startedAt: Date.now(),
      phase: "starting",
    };
    this.finished = this.run().finally(() => settings.onFinished?.(order.turnId));
  }

  get turnId(): string {
    return this.order.turnId;
  }

  /** Ends the model request and the running command's process group; the turn ends `cancelled`. */
  cancel(): void {
    this.abort.abort(new Error("cancelled by the user"));
  }

  /** Delivers a user's approval decision. */
  decide(approvalId: string, decision: ApprovalDecision): void {
    this.approvals.decide(approvalId, decision);
  }

  /** Re-sends unacknowledged events (after a reconnect). */
  resend(): void {
    this.sender?.notify();
  }

  private emit(event: AgentEvent): void {
    this.journal.append(event);
    this.sender.notify();
    this.track(event);
  }

  private track(event: AgentEvent): void {
    const progress = this.progress;
    switch (event.type) {
      case "status":
        if (event.data.pass !== undefined) progress.pass = event.data.pass;
        if (event.data.phase) progress.phase = event.data.phase;
        progress.detail = event.data.message;
        break;
      case "tool_start":
        progress.tool = event.data.tool;
        progress.phase = "tool";
        break;
      case "tool_result":
        progress.tool = null;
        progress.phase = "thinking";
        break;
      case "cost_update":
        progress.tokens = event.data.tokens.input + event.data.tokens.output;
        progress.cost = event.data.totalCost;
        break;
      default:
        return;
    }
    this.settings.onProgress?.(progress);
  }

  private async run(): Promise<void> {
    const { order, settings } = this;
    this.journal = await settings.journal.open(order.turnId, order.nextSeq);
    this.sender = new EventSender(settings.socket, this.journal, {
      onRejected: (error) => {
        settings.logger.warn(
          { turnId: order.turnId, code: error.code },
          `server refused the turn's events: ${error.message}`,
        );
        // The turn was taken from this drone (cancelled, interrupted, revoked): stop working on it.
        this.abort.abort(new Error(error.message));
      },
    });
    let lock: WorkspaceLock | null = null;
    let outcome: { reason: ExitReason; passes: number; totalCost: number } = {
      reason: "error",
      passes: 0,
      totalCost: 0,
    };
    try {
      const signal = this.abort.signal;
      lock = await acquireLock(
        path.join(settings.workspaceRoot, ".locks", `${order.project.slug}.lock`),
        order.turnId,
        {
          signal,
          onWait: (owner) =>
            this.emit(
              agentEvent("status", {
                phase: "workspace",
                message: `Waiting for the workspace: turn ${owner?.turnId ?? "?"} is using it`,
              }),
            ),
        },
      );
      this.progress.phase = "workspace";
      const directory = await this.prepare(signal);
      const snapshot = await snapshotWorkspace(directory, { signal });

      let result = await this.runEngine(this.engineInput(directory), signal);
      outcome = { reason: result.reason, passes: result.passes, totalCost: result.totalCost };

      let verified = await this.verify(directory, result, signal);
      for (
        let attempt = 1;
        verified && !verified.ok && attempt <= (settings.verifyRepairAttempts ?? 2);
        attempt++
      ) {
        if (signal.aborted) break;
        this.emit(
          agentEvent("status", {
            phase: "verification",
            message: `Verification failed; repair pass ${attempt}`,
          }),
        );
        result = await this.runEngine(this.repairInput(directory, result, verified.report), signal);
        outcome = {
          reason: result.reason,
          passes: outcome.passes + result.passes,
          totalCost: outcome.totalCost + result.totalCost,
        };
        verified = await this.verify(directory, result, signal, attempt);
      }

      const changes = await changesSince(directory, snapshot, { maxDiffBytes });
      this.emit(
        agentEvent("changes", {
          files: changes.files,
          diff: changes.diff,
          truncated: changes.truncated,
        }),
      );
      if (verified) this.emit(agentEvent("verification", verified.event));
    } catch (error) {
      if (this.abort.signal.aborted) {
        outcome = { ...outcome, reason: "cancelled" };
      } else {
        const message = error instanceof Error ? error.message : String(error);
        const code = (error as { code?: unknown }).code;
        this.emit(
          agentEvent("error", { code: typeof code === "string" ? code : "drone_error", message }),
        );
        outcome = { ...outcome, reason: "error" };
        settings.logger.error({ turnId: order.turnId, err: message }, "turn failed on the drone");
      }
    } finally {
      this.emit(agentEvent("done", outcome));
      await lock?.release();
    }
    await this.sender.drained();
    await this.checkpointInFlight;
    if (!this.sender.isRejected || this.journal.pending().length === 0) await this.journal.remove();
  }

  private async prepare(signal: AbortSignal): Promise<string> {
    const { order, settings } = this;
    let lastPercent = -100;
    this.emit(
      agentEvent("status", {
        phase: "workspace",
        message: `Preparing the workspace for ${order.project.name}`,
      }),
    );
    const prepared = await prepareWorkspace({
      workspaceRoot: settings.workspaceRoot,
      slug: order.project.slug,
      gitUrl: order.project.gitUrl,
      defaultBranch: order.project.defaultBranch,
      signal,
      onProgress: ({ stage, percent }) => {
        // Progress arrives many times a second; a status event every 10% is plenty.
        if (percent < lastPercent + 10 && percent !== 100) return;
        lastPercent = percent;
        this.emit(agentEvent("status", { phase: "workspace", message: `${stage} ${percent}%` }));
      },
    });
    this.emit(agentEvent("status", { phase: "workspace", message: prepared.message }));
    return prepared.directory;
  }

  private engineInput(directory: string): TurnInput {
    const { order } = this;
    const provider = order.provider;
    return {
      goal: order.prompt,
      history: order.context,
      provider: {
        baseUrl: provider.baseUrl,
        apiKey: provider.apiKey,
        modelId: provider.modelId,
        params: provider.params,
        ...(provider.escalationModelId ? { escalationModelId: provider.escalationModelId } : {}),
        ...(provider.contextWindow ? { contextWindow: provider.contextWindow } : {}),
        ...(provider.pricing ? { pricing: provider.pricing } : {}),
      },
      mode: order.session.mode,
      approval: order.session.approval,
      limits: order.limits,
      tools: createTools({ secretValues: this.secrets() }),
      contextSources: workspaceContextSources(),
      workspace: directory,
      ...(order.resume ? { resume: order.resume } : {}),
    };
  }

  /** A further loop after failed verification: the turn so far is history, the failure the goal. */
  private repairInput(directory: string, previous: TurnOutcome, report: string): TurnInput {
    const history: IChatMessage[] = [
      ...this.order.context,
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
      ...this.engineInput(directory),
      goal: `The project's verification commands failed after your changes. Fix the cause, then answer briefly.\n\n${report}`,
      history,
    };
  }

  private async runEngine(input: TurnInput, signal: AbortSignal): Promise<TurnOutcome> {
    const settings = this.settings;
    const turn = runTurn(input, {
      signal,
      onApproval: this.approvals.handler,
      onCheckpoint: (state) => this.checkpoint(state),
      logger: settings.logger,
      ...(settings.tunables ? { tunables: settings.tunables } : {}),
    });
    for (;;) {
      const next = await turn.next();
      if (next.done) return next.value;
      // The drone ends the turn itself, after the changes report and verification.
      if (next.value.type === "done") continue;
      this.emit(next.value);
    }
  }

  /** Keeps the latest messages and state on disk and sends them, so the turn can resume anywhere. */
  private checkpoint(state: TurnState): void {
    const checkpoint = { turnId: this.order.turnId, messages: state.messages, state };
    this.journal.recordCheckpoint(checkpoint);
    this.checkpointInFlight = this.checkpointInFlight.then(async () => {
      if (!this.settings.socket.connected) return;
      try {
        await this.settings.socket.timeout(15_000).emitWithAck("turn_checkpoint", checkpoint);
      } catch (error) {
        this.settings.logger.warn(
          { turnId: this.order.turnId, err: String(error) },
          "checkpoint not acknowledged",
        );
      }
    });
  }

  private async verify(
    directory: string,
    result: TurnOutcome,
    signal: AbortSignal,
    repairPasses = 0,
  ): Promise<{
    ok: boolean;
    report: string;
    event: Extract<AgentEvent, { type: "verification" }>["data"];
  } | null> {
    const commands = this.order.project.verifyCommands ?? [];
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
      this.emit(agentEvent("status", { phase: "verification", message: `Verifying: ${command}` }));
      const run = await runCommand(command, {
        workspace: directory,
        timeoutMs: this.settings.verifyTimeoutMs ?? 300_000,
        signal,
        secretValues: this.secrets(),
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
      .map(
        (entry) => `$ ${entry.command}\n(exit code ${entry.exitCode ?? "none"})\n${entry.output}`,
      )
      .join("\n\n");
    return { ok, report, event: { ok, commands: results, repairPasses } };
  }

  private secrets(): string[] {
    return [...this.settings.secretValues, this.order.provider.apiKey].filter(
      (value) => value.length >= 4,
    );
  }
}
