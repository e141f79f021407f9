// Runs one work order on this machine, phase by phase (turn/*): lock the session's worktree, fetch
// the project's clone and prepare the worktree, confine it, snapshot it, run the agent loop with
// the tools, verify (with repair passes), report the changes, commit and deliver, and end with
// `done`. Every event is journaled and streamed until the server has it.
import { rm } from "node:fs/promises";
import {
  ApprovalChannel,
  type ApprovalDecision,
  runTurn,
  SteeringInbox,
  type TurnInput,
  type TurnOptions,
  type TurnOutcome,
} from "@gadget/agent";
import {
  type AgentEvent,
  agentEvent,
  type ExitReason,
  type IWorkOrder,
  toGadgetError,
  toStorable,
} from "@gadget/protocol";
import { type CommandConfinement, type ConfinementPolicy, confine } from "@gadget/sandbox";
import {
  createLoadSkillTool,
  createTools,
  type SkillSummary,
  snapshotWorkspace,
  type WorkspaceSnapshot,
} from "@gadget/tools";
import type { SandboxHooks } from "./hooks/hook-runner.ts";
import { setUpTurnHooks } from "./hooks/turn-hooks-setup.ts";
import type { McpLease, McpManager } from "./mcp/mcp-manager.ts";
import type { EventJournal, TurnJournal } from "./streaming/journal.ts";
import type { EventSender } from "./streaming/sender.ts";
import { LeftOutReport, reportChanges } from "./turn/changes.ts";
import { TurnCheckpoints } from "./turn/checkpoint.ts";
import { preparePrompt } from "./turn/command-expansion.ts";
import {
  type ConfinementSettings,
  confineTurn,
  openMcpServers,
  turnSecrets,
} from "./turn/confinement.ts";
import { commitTurn } from "./turn/delivery.ts";
import { engineInput } from "./turn/engine-input.ts";
import { startProgress, type TurnProgress, trackProgress } from "./turn/progress.ts";
import type { TurnScope } from "./turn/scope.ts";
import { type SendingSettings, turnSender } from "./turn/sending.ts";
import { repairInput, type Verification, verify } from "./turn/verification.ts";
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

/** What `done` says: why the turn ended, and the passes and cost of all its engine runs. */
interface Outcome {
  reason: ExitReason;
  passes: number;
  totalCost: number;
}

/** A turn this drone is running. */
export class ActiveTurn {
  readonly abort = new AbortController();
  readonly approvals = new ApprovalChannel();
  /** Users' messages to the turn, taken by the engine before its next model call. */
  readonly steering = new SteeringInbox();
  readonly progress: TurnProgress;
  readonly finished: Promise<void>;
  private sender!: EventSender;
  private journal!: TurnJournal;
  private checkpoints!: TurnCheckpoints;
  private confinement!: CommandConfinement;
  private mcpLease: McpLease | null = null;
  /** The project's hooks as of the commit the turn started on (hooks/turn-hooks.ts). */
  private hooks: SandboxHooks | undefined;
  /** Where the committed `.gadget/` is copied for the hooks; removed when the turn ends. */
  private hooksCopy: string | undefined;
  private policy: ConfinementPolicy | undefined;
  private journalOpened: Promise<void> = new Promise(() => undefined);
  /** What every phase is handed: the order, `emit` and the logger. */
  private readonly scope: TurnScope;
  private readonly secretValues: string[];
  /** An event of the turn could not be stored (see EventSender): the turn ends with an error. */
  private refused = false;
  /** What the drone's git left out of the snapshot or commit, said once. */
  private readonly leftOut: LeftOutReport;
  /**
   * The prompt the engine gets: the order's, or the `/command` it calls expanded; then with the
   * MCP resources it names as `@server:uri` attached.
   */
  private goal: string;
  /** The worktree's skills as the turn started (`load_skill` reads them). */
  private skills: SkillSummary[] = [];

  constructor(
    readonly order: IWorkOrder,
    private readonly settings: TurnRunnerSettings,
  ) {
    this.progress = startProgress(order);
    this.goal = order.prompt;
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
   * The server gave this turn to the drone again from its last stored checkpoint (decision 0046):
   * this run stops, and nothing more of it is journaled, sent or checkpointed.
   */
  supersede(): void {
    this.superseded = true;
    this.sender?.stop();
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
    this.journal?.rebase(storedUpTo, nextSeq);
    this.sender?.renumbered(storedUpTo, nextSeq);
  }

  /**
   * Takes a user's message to the turn: journaled first (answered once on disk), then handed to
   * the engine. A message re-sent after a reconnect is taken once.
   */
  async steer(message: { messageId: string; text: string; interrupt: boolean }): Promise<void> {
    await this.journalOpened;
    if (this.journal.messages.some((known) => known.messageId === message.messageId)) return;
    await this.journal.recordMessage(message);
    this.steering.push({ id: message.messageId, text: message.text, interrupt: message.interrupt });
  }

  /** Re-sends unacknowledged events (after a reconnect). */
  resend(): void {
    this.sender?.notify();
  }

  private emit(raw: AgentEvent): void {
    if (this.superseded) return;
    // Free-form data (a tool's params) made storable: a key such as "package.json" or a 10 MiB
    // file's content would otherwise have the server refuse the whole batch.
    const event = { ...raw, data: toStorable(raw.data) } as AgentEvent;
    this.journal.append(event);
    this.sender.notify();
    if (trackProgress(this.progress, event)) this.settings.onProgress?.(this.progress);
  }

  private async run(): Promise<void> {
    const { settings, scope } = this;
    this.journalOpened = this.openJournal();
    await this.journalOpened;
    // Messages sent to the turn before it reached this drone.
    for (const message of this.order.steering ?? []) await this.steer(message);
    let lock: WorkspaceLock | null = null;
    let worktree: SessionWorktree | null = null;
    let snapshot: WorkspaceSnapshot | null = null;
    const outcome: Outcome = { reason: "error", passes: 0, totalCost: 0 };
    try {
      const signal = this.abort.signal;
      lock = await lockWorktree(scope, settings.workspaceRoot, signal);
      this.progress.phase = "workspace";
      worktree = await prepareWorktree(scope, settings.workspaceRoot, signal);
      const directory = worktree.directory;
      await this.confine(directory);
      const hooks = await setUpTurnHooks(
        scope,
        { ...settings, policy: this.policy as ConfinementPolicy, secretValues: this.secretValues },
        directory,
        signal,
      );
      this.hooks = hooks?.hooks;
      this.hooksCopy = hooks?.copy;
      snapshot = await snapshotWorkspace(directory, { signal });
      ({ goal: this.goal, skills: this.skills } = await preparePrompt(
        scope,
        { workspaceRoot: settings.workspaceRoot, secretValues: this.secretValues },
        directory,
        this.mcpLease,
      ));

      const verified = await this.runAndVerify(directory, signal, outcome);

      await reportChanges(scope, directory, snapshot, this.leftOut);
      if (verified) this.emit(agentEvent("verification", verified.event));
    } catch (error) {
      if (this.abort.signal.aborted) {
        outcome.reason = "cancelled";
      } else {
        this.fail(error);
        outcome.reason = "error";
      }
    } finally {
      this.mcpLease?.release();
      if (worktree) {
        await commitTurn(scope, worktree, snapshot, {
          workspaceRoot: settings.workspaceRoot,
          onLeftOut: (leftOut) => this.leftOut.tell(leftOut),
        });
      }
      if (this.hooksCopy) await rm(this.hooksCopy, { recursive: true, force: true });
      if (this.refused) outcome.reason = "error";
      else if (this.stoppedByShutdown && outcome.reason === "cancelled") {
        outcome.reason = "drone_shutdown";
        this.emit(
          agentEvent("status", {
            message: "The drone was shut down while this turn ran; resume it to go on",
            level: "warning",
          }),
        );
      }
      this.emit(agentEvent("done", { ...outcome }));
      await lock?.release();
    }
    await this.sender.drained();
    await this.checkpoints.settled();
    if (this.superseded || !this.sender.isRejected || this.journal.pending().length === 0) {
      await this.journal.remove();
    }
  }

  /** The turn's journal, the sender that streams it to the server, and its checkpoints. */
  private async openJournal(): Promise<void> {
    const { order, settings } = this;
    this.journal = await settings.journal.open(order.turnId, order.nextSeq);
    this.sender = turnSender(this.journal, this.progress, this.abort, settings, () => {
      this.refused = true;
    });
    if (this.superseded) this.sender.stop();
    this.checkpoints = new TurnCheckpoints(
      order.turnId,
      this.journal,
      settings.socket,
      this.sender,
      settings.logger,
    );
  }

  /** Confines the turn's commands to its worktree and opens the session's MCP servers in it. */
  private async confine(directory: string): Promise<void> {
    const { scope, settings } = this;
    const policy = await confineTurn(scope, settings, directory);
    this.policy = policy;
    this.confinement = confine(settings.sandbox, policy);
    this.mcpLease = await openMcpServers(scope, settings, directory, policy, this.secretValues);
  }

  /**
   * Runs the engine, then verifies; failed verification gets repair passes. `outcome` adds up
   * every run's passes and cost as they end, so a failure part-way still reports them.
   */
  private async runAndVerify(
    directory: string,
    signal: AbortSignal,
    outcome: Outcome,
  ): Promise<Verification | null> {
    const { order, settings, scope } = this;
    let result = await this.runEngine(this.engineInput(directory), signal);
    Object.assign(outcome, {
      reason: result.reason,
      passes: result.passes,
      totalCost: result.totalCost,
    });

    const verifying = {
      confinement: this.confinement,
      secretValues: this.secretValues,
      timeoutMs: settings.verifyTimeoutMs,
    };
    let verified = await verify(scope, verifying, directory, result, signal);
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
      const repair = repairInput(
        this.engineInput(directory),
        order.context,
        result,
        verified.report,
      );
      result = await this.runEngine(repair, signal);
      Object.assign(outcome, {
        reason: result.reason,
        passes: outcome.passes + result.passes,
        totalCost: outcome.totalCost + result.totalCost,
      });
      verified = await verify(scope, verifying, directory, result, signal, attempt);
    }
    return verified;
  }

  /** A failure of the drone's own part of the turn, told as an `error` event with a stable code. */
  private fail(error: unknown): void {
    const problem = toGadgetError(error);
    // An unexpected failure keeps its own words: the drone runs on the user's machine, and
    // "Internal error" would hide what there is to fix (a full disk, a missing git).
    const words = error instanceof Error ? error.message : String(error);
    const message = problem.code === "internal" ? words : problem.message;
    this.emit(agentEvent("error", { code: problem.code, message }));
    this.settings.logger.error(
      { turnId: this.order.turnId, err: message },
      "turn failed on the drone",
    );
  }

  /** The engine's input in this turn's worktree: its tools, skills and MCP servers' tools. */
  private engineInput(directory: string): TurnInput {
    return engineInput(this.order, {
      directory,
      goal: this.goal,
      skills: this.skills,
      tools: [
        ...createTools({
          secretValues: this.secretValues,
          sandbox: this.confinement,
          projectEnv: this.order.project.env,
        }),
        ...(this.skills.length ? [createLoadSkillTool(this.skills)] : []),
        ...(this.mcpLease?.tools ?? []),
      ],
    });
  }

  private async runEngine(input: TurnInput, signal: AbortSignal): Promise<TurnOutcome> {
    const settings = this.settings;
    const turn = runTurn(input, {
      signal,
      onApproval: this.approvals.handler,
      steering: this.steering,
      ...(this.hooks ? { hooks: this.hooks } : {}),
      onCheckpoint: (state) => this.checkpoints.record(state),
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
}
