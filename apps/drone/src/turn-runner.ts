// Runs one work order on this machine, phase by phase (turn/*): lock the session's worktree, fetch
// the project's clone and prepare the worktree, confine it, snapshot it, run the agent loop with
// the tools, verify (with repair passes), report the changes, commit and deliver, and end with
// `done`. Every event is journaled and streamed until the server has it.
import { rm } from "node:fs/promises";
import {
  ApprovalChannel,
  type ApprovalDecision,
  SteeringInbox,
  type TurnOptions,
} from "@gadget/agent";
import { type AgentEvent, agentEvent, type IWorkOrder, toStorable } from "@gadget/protocol";
import { type SkillSummary, snapshotWorkspace, type WorkspaceSnapshot } from "@gadget/tools";
import type { SandboxHooks } from "./hooks/hook-runner.ts";
import { setUpTurnHooks } from "./hooks/turn-hooks-setup.ts";
import type { McpManager } from "./mcp/mcp-manager.ts";
import type { EventJournal } from "./streaming/journal.ts";
import { LeftOutReport, reportChanges } from "./turn/changes.ts";
import { preparePrompt } from "./turn/command-expansion.ts";
import {
  type ConfinedTurn,
  type ConfinementSettings,
  confineWorktree,
  turnSecrets,
} from "./turn/confinement.ts";
import { commitTurn } from "./turn/delivery.ts";
import { engineInput, turnTools } from "./turn/engine-input.ts";
import { runEngine } from "./turn/engine-run.ts";
import { reportFailure } from "./turn/failure.ts";
import { startProgress, type TurnProgress, trackProgress } from "./turn/progress.ts";
import type { TurnScope } from "./turn/scope.ts";
import { openTurnStream, type SendingSettings, type TurnStream } from "./turn/sending.ts";
import { type EngineRuns, type RunsTally, runAndVerify } from "./turn/verification.ts";
import { lockWorktree, prepareWorktree } from "./turn/worktree.ts";
import type { WorkspaceLock } from "./workspace/lock.ts";
import type { SessionWorktree } from "./workspace/worktree.ts";

export interface TurnRunnerSettings extends ConfinementSettings, SendingSettings {
  journal: EventJournal;
  /** Values never to reach a command's environment or output (the drone's credential). */
  secretValues: string[];
  /** Starts and keeps the project's MCP servers per session; without it turns get none. */
  mcp?: McpManager;
  /** Repair passes the loop gets when verification fails; default 2. */
  verifyRepairAttempts?: number;
  /** Per-command timeout for verification; default 300 000 ms. */
  verifyTimeoutMs?: number;
  /** Engine knobs (tests shrink delays). */
  tunables?: TurnOptions["tunables"];
  onFinished?: (turnId: string) => void;
}

/** A turn this drone is running. */
export class ActiveTurn {
  readonly abort = new AbortController();
  readonly approvals = new ApprovalChannel();
  /** Users' messages to the turn, taken by the engine before its next model call. */
  readonly steering = new SteeringInbox();
  readonly progress: TurnProgress;
  readonly finished: Promise<void>;
  /** The turn's journal, its sender to the server and its checkpoints (turn/sending.ts). */
  private stream!: TurnStream;
  private journalOpened: Promise<void> = new Promise(() => undefined);
  /** What every phase is handed: the order, `emit` and the logger. */
  private readonly scope: TurnScope;
  private readonly secretValues: string[];
  /** An event of the turn could not be stored (see EventSender): the turn ends with an error. */
  private refused = false;
  /** What the drone's git left out of the snapshot or commit, said once. */
  private readonly leftOut: LeftOutReport;

  constructor(
    readonly order: IWorkOrder,
    private readonly settings: TurnRunnerSettings,
  ) {
    this.progress = startProgress(order);
    this.scope = { order, emit: (event) => this.emit(event), logger: settings.logger };
    this.secretValues = turnSecrets(order, settings.secretValues);
    this.leftOut = new LeftOutReport(this.scope.emit);
    this.finished = this.run().finally(() => settings.onFinished?.(order.turnId));
  }

  get turnId(): string {
    return this.order.turnId;
  }

  /** Ends the model request and the running command's process group; the turn ends `cancelled`. */
  cancel(): void {
    this.abort.abort(new Error("cancelled by the user"));
  }

  /** The same as `cancel`, but the drone is stopping: the turn ends `drone_shutdown`. */
  shutDown(): void {
    this.stoppedByShutdown ||= !this.abort.signal.aborted;
    this.abort.abort(new Error("the drone is shutting down"));
  }

  /** Whether the turn was stopped because its drone shut down (not by its user). */
  private stoppedByShutdown = false;

  /**
   * Its `done` is emitted: only the journal's tail is left to send. The server frees the turn's
   * slot once it stores `done`, so an ended turn holds none here either.
   */
  ended = false;

  /**
   * The server gave this turn to the drone again from its last stored checkpoint (decision 0046):
   * this run stops, and nothing more of it is journaled, sent or checkpointed.
   */
  supersede(): void {
    this.superseded = true;
    this.stream?.sender.stop();
    this.abort.abort(new Error("the turn was dispatched again from its checkpoint"));
  }

  /** Whether this run was superseded by the turn's rerun. */
  superseded = false;

  /** Delivers a user's approval decision. */
  decide(approvalId: string, decision: ApprovalDecision): void {
    this.approvals.decide(approvalId, decision);
  }

  /** Renumbers the turn's unsent events after the server's (it waited for this drone). */
  rebase(storedUpTo: number, nextSeq: number): void {
    this.stream?.journal.rebase(storedUpTo, nextSeq);
    this.stream?.sender.renumbered(storedUpTo, nextSeq);
  }

  /**
   * Takes a user's message to the turn: journaled first (answered once on disk), then handed to
   * the engine. A message re-sent after a reconnect is taken once.
   */
  async steer(message: { messageId: string; text: string; interrupt: boolean }): Promise<void> {
    await this.journalOpened;
    const journal = this.stream.journal;
    if (journal.messages.some((known) => known.messageId === message.messageId)) return;
    await journal.recordMessage(message);
    this.steering.push({ id: message.messageId, text: message.text, interrupt: message.interrupt });
  }

  /** Re-sends unacknowledged events (after a reconnect). */
  resend(): void {
    this.stream?.sender.notify();
  }

  private emit(raw: AgentEvent): void {
    if (this.superseded) return;
    // Free-form data (a tool's params) made storable: a key such as "package.json" or a 10 MiB
    // file's content would otherwise have the server refuse the whole batch.
    const event = { ...raw, data: toStorable(raw.data) } as AgentEvent;
    this.stream.journal.append(event);
    this.stream.sender.notify();
    if (trackProgress(this.progress, event)) this.settings.onProgress?.(this.progress);
  }

  private async run(): Promise<void> {
    const { settings, scope, order } = this;
    this.journalOpened = this.openJournal();
    await this.journalOpened;
    // Messages sent to the turn before it reached this drone.
    for (const message of order.steering ?? []) await this.steer(message);
    let lock: WorkspaceLock | null = null;
    let worktree: SessionWorktree | null = null;
    let snapshot: WorkspaceSnapshot | null = null;
    let confined: ConfinedTurn | null = null;
    /** Where the committed `.gadget/` is copied for the hooks; removed when the turn ends. */
    let hooksCopy: string | undefined;
    const tally: RunsTally = { reason: "error", passes: 0, totalCost: 0 };
    try {
      const signal = this.abort.signal;
      lock = await lockWorktree(scope, settings.workspaceRoot, signal);
      this.progress.phase = "workspace";
      worktree = await prepareWorktree(scope, settings.workspaceRoot, signal);
      const directory = worktree.directory;
      const secretValues = this.secretValues;
      confined = await confineWorktree(scope, settings, directory, secretValues);
      const hooks = await setUpTurnHooks(
        scope,
        { ...settings, policy: confined.policy, secretValues },
        directory,
        signal,
      );
      hooksCopy = hooks?.copy;
      snapshot = await snapshotWorkspace(directory, { signal });
      // The prompt as its `/command` expands, with the MCP resources it names attached.
      const prompt = await preparePrompt(
        scope,
        { workspaceRoot: settings.workspaceRoot, secretValues },
        directory,
        confined.mcp,
      );
      const verified = await runAndVerify(
        scope,
        {
          confinement: confined.confinement,
          secretValues,
          timeoutMs: settings.verifyTimeoutMs,
          repairAttempts: settings.verifyRepairAttempts,
        },
        directory,
        this.engineRuns(directory, confined, prompt, hooks?.hooks, signal),
        tally,
        signal,
      );

      await reportChanges(scope, directory, snapshot, this.leftOut);
      if (verified) this.emit(agentEvent("verification", verified.event));
    } catch (error) {
      if (this.abort.signal.aborted) {
        tally.reason = "cancelled";
      } else {
        reportFailure(scope, error);
        tally.reason = "error";
      }
    } finally {
      confined?.mcp?.release();
      if (worktree) {
        await commitTurn(scope, worktree, snapshot, {
          workspaceRoot: settings.workspaceRoot,
          onLeftOut: (leftOut) => this.leftOut.tell(leftOut),
        });
      }
      if (hooksCopy) await rm(hooksCopy, { recursive: true, force: true });
      if (this.refused) tally.reason = "error";
      else if (this.stoppedByShutdown && tally.reason === "cancelled") {
        tally.reason = "drone_shutdown";
        this.emit(
          agentEvent("status", {
            message: "The drone was shut down while this turn ran; resume it to go on",
            level: "warning",
          }),
        );
      }
      this.emit(agentEvent("done", { ...tally }));
      this.ended = true;
      await lock?.release();
    }
    const { sender, checkpoints, journal } = this.stream;
    await sender.drained();
    await checkpoints.settled();
    if (this.superseded || !sender.isRejected || journal.pending().length === 0) {
      await journal.remove();
    }
  }

  /** The engine's runs in the turn's worktree, each input with its own tools (turn/engine-input.ts). */
  private engineRuns(
    directory: string,
    { confinement, mcp }: ConfinedTurn,
    { goal, skills }: { goal: string; skills: SkillSummary[] },
    hooks: SandboxHooks | undefined,
    signal: AbortSignal,
  ): EngineRuns {
    const { order, secretValues } = this;
    const wiring = {
      approvals: this.approvals,
      steering: this.steering,
      checkpoints: this.stream.checkpoints,
      hooks,
      tunables: this.settings.tunables,
    };
    return {
      input: () =>
        engineInput(order, {
          directory,
          goal,
          skills,
          tools: turnTools(order, { confinement, secretValues, skills, mcpTools: mcp?.tools }),
        }),
      run: (input) => runEngine(this.scope, input, wiring, signal),
    };
  }

  /** The turn's journal, the sender that streams it to the server, and its checkpoints. */
  private async openJournal(): Promise<void> {
    this.stream = await openTurnStream(this.order, this.settings, this.progress, this.abort, () => {
      this.refused = true;
    });
    if (this.superseded) this.stream.sender.stop();
  }
}
