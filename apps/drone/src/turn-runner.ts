// Runs one work order on this machine: lock the session's worktree, fetch the project's clone and
// prepare the worktree, snapshot it, run the agent loop with the tools, report the changes, verify,
// commit the turn's work to the session's branch, push it when the project delivers branches, and
// end with `done`. Every event is journaled and streamed until the server has it.
import { realpath } from "node:fs/promises";
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
  MAX_CHANGED_FILES,
  MAX_CHANGED_PATH_BYTES,
  pullRequestText,
  splitThinking,
  storableIssue,
  toStorable,
  WAITING_FOR_WORKTREE,
} from "@gadget/protocol";
import {
  type CommandConfinement,
  type ConfinementPolicy,
  confine,
  type Sandbox,
} from "@gadget/sandbox";
import {
  cappedChanges,
  changesSince,
  createTools,
  describeLeftOut,
  type LeftOut,
  runCommand,
  snapshotWorkspace,
  type WorkspaceSnapshot,
  workspaceContextSources,
} from "@gadget/tools";
import type { McpLease, McpManager } from "./mcp/mcp-manager.ts";
import { projectHome } from "./sandbox.ts";
import type { EventJournal, TurnJournal } from "./streaming/journal.ts";
import { type DroneSocket, EventSender, type SenderOptions } from "./streaming/sender.ts";
import { storedCredentials } from "./workspace/credentials.ts";
import {
  deliverPullRequest,
  type PullRequestResult,
  pushSessionBranch,
} from "./workspace/delivery.ts";
import { acquireLock, type WorkspaceLock } from "./workspace/lock.ts";
import { prepareWorkspace, projectDirectory } from "./workspace/prepare.ts";
import {
  cloneLockFile,
  commitSessionWork,
  prepareSessionWorktree,
  type SessionWorktree,
  touchWorktree,
  worktreeLockFile,
} from "./workspace/worktree.ts";

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
  /** Confines every command the turn runs (the agent's and verification's). */
  sandbox: Sandbox;
  /** Directories no command may see (the drone's config, workspaces, journal). */
  hiddenPaths: readonly string[];
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
  /** How events are sent: patience with an unavailable server, backoff, ack timeout. */
  sending?: Pick<SenderOptions, "patienceMs" | "retryDelayMs" | "maxRetryDelayMs" | "ackTimeoutMs">;
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
  private confinement!: CommandConfinement;
  private policy!: ConfinementPolicy;
  private mcpLease: McpLease | null = null;
  private checkpointInFlight: Promise<void> = Promise.resolve();
  /** An event of the turn could not be stored (see EventSender): the turn ends with an error. */
  private refused = false;

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

  private emit(raw: AgentEvent): void {
    // Free-form data (a tool's params) made storable: a key such as "package.json" or a 10 MiB
    // file's content would otherwise have the server refuse the whole batch.
    const event = { ...raw, data: toStorable(raw.data) } as AgentEvent;
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
      ...settings.sending,
      onRetrying: (since, reason) => {
        // The turn goes on; its events wait in the journal until the server can store them.
        this.progress.detail = since ? `server unavailable, retrying: ${reason}` : undefined;
        if (since) {
          settings.logger.warn({ turnId: order.turnId, reason }, "server unavailable; retrying");
        } else {
          settings.logger.info({ turnId: order.turnId }, "server stores events again");
        }
        settings.onProgress?.(this.progress);
      },
      onRejected: (error) => {
        settings.logger.warn(
          { turnId: order.turnId, code: error.code },
          `server refused the turn's events: ${error.message}`,
        );
        // The turn was taken from this drone (cancelled, interrupted, revoked): stop working on it.
        this.abort.abort(new Error(error.message));
      },
      onRefusedEvent: (_seq, message) => {
        // Its error event is in the journal already: the turn ends as failed, not cancelled.
        this.refused = true;
        settings.logger.warn({ turnId: order.turnId }, message);
        this.abort.abort(new Error(message));
      },
    });
    let lock: WorkspaceLock | null = null;
    let worktree: SessionWorktree | null = null;
    let snapshot: WorkspaceSnapshot | null = null;
    let outcome: { reason: ExitReason; passes: number; totalCost: number } = {
      reason: "error",
      passes: 0,
      totalCost: 0,
    };
    try {
      const signal = this.abort.signal;
      // Per session: its turns wait for each other, other sessions of the project run alongside.
      lock = await acquireLock(
        worktreeLockFile(settings.workspaceRoot, order.project.slug, this.sessionId),
        order.turnId,
        {
          signal,
          // Users know turns by their prompts, not ids: the session page shows the other turn.
          onWait: () =>
            this.emit(
              agentEvent("status", {
                phase: "workspace",
                message: WAITING_FOR_WORKTREE,
              }),
            ),
        },
      );
      this.progress.phase = "workspace";
      worktree = await this.prepare(signal);
      const directory = worktree.directory;
      this.confinement = await this.confine(directory);
      this.mcpLease = await this.openMcpServers(directory);
      snapshot = await snapshotWorkspace(directory, { signal });

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
      this.reportLeftOut(changes.leftOut);
      const listed = cappedChanges(changes.files, MAX_CHANGED_FILES, MAX_CHANGED_PATH_BYTES);
      this.emit(
        agentEvent("changes", {
          files: listed.files,
          diff: changes.diff,
          truncated: changes.truncated,
          ...(listed.total > listed.files.length ? { total: listed.total } : {}),
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
      this.mcpLease?.release();
      if (worktree) await this.commit(worktree, snapshot);
      if (this.refused) outcome = { ...outcome, reason: "error" };
      this.emit(agentEvent("done", outcome));
      await lock?.release();
    }
    await this.sender.drained();
    await this.checkpointInFlight;
    if (!this.sender.isRejected || this.journal.pending().length === 0) await this.journal.remove();
  }

  /** Says once per turn what the drone's git left out of its snapshot or commit, and why. */
  private reportLeftOut(leftOut: LeftOut[]): void {
    const message = describeLeftOut(leftOut);
    if (!message || this.reported.has(message)) return;
    this.reported.add(message);
    this.emit(agentEvent("status", { phase: "workspace", level: "warning", message }));
  }

  private readonly reported = new Set<string>();

  /** The session whose worktree the turn works in; a work order without one is a session of its own. */
  private get sessionId(): string {
    return this.order.session._id ?? this.order.turnId;
  }

  /** Fetches the project's clone and makes (or finds) the session's worktree. */
  private async prepare(signal: AbortSignal): Promise<SessionWorktree> {
    const { order, settings } = this;
    let lastPercent = -100;
    this.emit(
      agentEvent("status", {
        phase: "workspace",
        message: `Preparing the workspace for ${order.project.name}`,
      }),
    );
    // The clone is shared by every session of the project: one fetch or worktree add at a time.
    const cloneLock = await acquireLock(
      cloneLockFile(settings.workspaceRoot, order.project.slug),
      order.turnId,
      {
        signal,
        onWait: () =>
          this.emit(
            agentEvent("status", {
              phase: "workspace",
              message: "Waiting for the project's clone: another turn is fetching it",
            }),
          ),
      },
    );
    try {
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
      const worktree = await prepareSessionWorktree({
        workspaceRoot: settings.workspaceRoot,
        slug: order.project.slug,
        clone: prepared.directory,
        session: { _id: this.sessionId, name: order.session.name },
        branchPrefix: order.project.branchPrefix,
        defaultBranch: prepared.defaultBranch,
        signal,
      });
      this.emit(agentEvent("status", { phase: "workspace", message: worktree.message }));
      return worktree;
    } finally {
      await cloneLock.release();
    }
  }

  /**
   * Commits the turn's work to the session's branch, whatever way the turn ended, and delivers the
   * branch as the project says (pushes it for `branch` and `pull-request`). When the commit fails,
   * the worktree's record keeps the turn's starting snapshot, so a revert can restore it.
   */
  private async commit(
    worktree: SessionWorktree,
    snapshot: WorkspaceSnapshot | null,
  ): Promise<void> {
    const { order, settings } = this;
    let failed = false;
    const subject = order.prompt.split("\n")[0]?.trim().slice(0, 72) || "Gadget Code turn";
    let commit: string | null = null;
    try {
      commit = await commitSessionWork(
        worktree.directory,
        // A trailer, so `git log --grep "Gadget-Turn: <id>"` finds the commit of a turn.
        `${subject}\n\nGadget-Turn: ${order.turnId}`,
        {
          ...(order.project.commitAuthor ? { author: order.project.commitAuthor } : {}),
          onLeftOut: (leftOut) => this.reportLeftOut(leftOut),
        },
      );
    } catch (error) {
      failed = true;
      const message = error instanceof Error ? error.message : String(error);
      settings.logger.warn({ turnId: order.turnId, err: message }, "could not commit the turn");
      this.emit(
        agentEvent("status", {
          phase: "workspace",
          level: "warning",
          message: `The turn's changes stay uncommitted in the session's worktree: ${message.split("\n")[0]}`,
        }),
      );
    }
    // The turn records its branch and commit (null: nothing changed, or the commit failed).
    this.emit(agentEvent("commit", { branch: worktree.branch, commit }));
    await touchWorktree(worktree.directory, {
      sessionId: this.sessionId,
      branch: worktree.branch,
      ...(failed && snapshot?.store === "repository"
        ? { uncommitted: { turnId: order.turnId, before: snapshot.tree } }
        : {}),
    }).catch(() => {});
    if (order.project.delivery !== "workspace") await this.deliver(worktree, commit);
  }

  /**
   * Pushes the session's branch to origin with the machine's own credentials (outside the sandbox),
   * then, for delivery `pull-request`, opens or updates the session's pull request. A failure
   * leaves the turn as it ended: the delivery event says why, and `POST /api/sessions/:id/deliver`
   * tries again.
   */
  private async deliver(worktree: SessionWorktree, commit: string | null): Promise<void> {
    const { order, settings } = this;
    this.emit(
      agentEvent("status", { phase: "delivery", message: `Pushing ${worktree.branch} to origin` }),
    );
    const outcome = await pushSessionBranch(worktree.directory, worktree.branch, {
      commit,
      credentialStore: storedCredentials(settings.workspaceRoot, order.project.slug),
    });
    if (outcome.error) {
      settings.logger.warn({ turnId: order.turnId, reason: outcome.error }, "push failed");
    }
    let pull: PullRequestResult = {};
    if (outcome.pushed && order.project.delivery === "pull-request") {
      pull = await this.pullRequest(worktree);
      if (pull.error) {
        settings.logger.warn({ turnId: order.turnId, reason: pull.error }, "pull request failed");
      }
    }
    const error = outcome.error ?? pull.error;
    this.emit(
      agentEvent("delivery", {
        branch: outcome.branch,
        commit: outcome.commit,
        pushed: outcome.pushed,
        ...(error ? { error } : {}),
        ...(pull.pullRequest
          ? { pullRequestUrl: pull.pullRequest.url, pullRequestNumber: pull.pullRequest.number }
          : {}),
      }),
    );
  }

  /** Opens the session's pull request, or updates the one an earlier turn opened. */
  private async pullRequest(worktree: SessionWorktree): Promise<PullRequestResult> {
    const { order } = this;
    const existing = order.session.pullRequest;
    this.emit(
      agentEvent("status", {
        phase: "delivery",
        message: existing
          ? `Updating the pull request ${existing.url}`
          : `Opening a pull request for ${worktree.branch}`,
      }),
    );
    // The session's turns so far (its history) and this one.
    const prompts = [
      ...order.context
        .filter((message) => message.role === "user")
        .map((message) => message.content),
      order.prompt,
    ];
    return deliverPullRequest(worktree.directory, worktree.branch, {
      forge: order.project.forge,
      gitUrl: order.project.gitUrl,
      base: order.project.defaultBranch,
      ...pullRequestText(order.session.name, prompts),
      existing,
    });
  }

  /** The turn's sandbox policy: its worktree, its project's HOME and network, nothing of the drone. */
  private async confine(directory: string): Promise<CommandConfinement> {
    const { order, settings } = this;
    const network = order.project.network;
    if (settings.sandbox.info.kind === "none") {
      this.emit(
        agentEvent("status", {
          phase: "sandbox",
          level: "warning",
          message: `This drone runs commands without a sandbox (it was started with --no-sandbox): they run as the drone's user, with its files and network${network.mode === "open" ? "" : `, so the project's network setting ("${network.mode}") is not enforced`}.`,
        }),
      );
    }
    this.policy = {
      workspace: await realpath(directory),
      home: projectHome({ workspace: settings.workspaceRoot }, order.project.slug),
      network,
      hidden: [settings.workspaceRoot, ...settings.hiddenPaths],
    };
    return confine(settings.sandbox, this.policy);
  }

  /** The session's MCP servers, started (inside the sandbox, in the worktree) or reused. */
  private async openMcpServers(directory: string): Promise<McpLease | null> {
    const { order, settings } = this;
    const servers = order.project.mcpServers;
    if (!settings.mcp || servers.length === 0) return null;
    this.emit(
      agentEvent("status", {
        phase: "mcp",
        message: `Connecting to MCP servers: ${servers.map((server) => server.name).join(", ")}`,
      }),
    );
    // Stdio servers start in the default-branch checkout (shown read-only), never in the worktree.
    const programDirectory = await realpath(
      projectDirectory(settings.workspaceRoot, order.project.slug),
    );
    return settings.mcp.open({
      session: `${order.project._id}:${this.sessionId}`,
      servers,
      confinement: confine(settings.sandbox, { ...this.policy, readOnly: [programDirectory] }),
      programDirectory,
      workspace: await realpath(directory),
      policy: JSON.stringify(order.project.network),
      secretValues: this.secrets(),
      onWarning: (message) =>
        this.emit(agentEvent("status", { phase: "mcp", level: "warning", message })),
    });
  }

  private engineInput(directory: string): TurnInput {
    const { order } = this;
    const provider = order.provider;
    return {
      goal: order.prompt,
      history: order.context,
      provider: {
        ...(provider.name ? { name: provider.name } : {}),
        baseUrl: provider.baseUrl,
        apiKey: provider.apiKey,
        modelId: provider.modelId,
        params: provider.params,
        ...(provider.escalationModelId ? { escalationModelId: provider.escalationModelId } : {}),
        ...(provider.contextWindow ? { contextWindow: provider.contextWindow } : {}),
        ...(provider.pricing ? { pricing: provider.pricing } : {}),
        quirks: provider.quirks,
      },
      mode: order.session.mode,
      approval: order.session.approval,
      allowedCommands: order.session.allowedCommands,
      limits: order.limits,
      tools: [
        ...createTools({
          secretValues: this.secrets(),
          sandbox: this.confinement,
          projectEnv: order.project.env,
        }),
        ...(this.mcpLease?.tools ?? []),
      ],
      contextSources: workspaceContextSources(),
      workspace: directory,
      ...(order.resume
        ? {
            resume: {
              ...order.resume,
              state:
                typeof order.resume.state === "string"
                  ? JSON.parse(order.resume.state)
                  : order.resume.state,
            },
          }
        : {}),
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
    // The engine's state goes as JSON text when the database could not store it as it is.
    const storable = storableIssue(state, { maxStringLength: Number.POSITIVE_INFINITY })
      ? JSON.stringify(state)
      : state;
    const checkpoint = { turnId: this.order.turnId, messages: state.messages, state: storable };
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
        sandbox: this.confinement,
        projectEnv: this.order.project.env,
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
    return [
      ...this.settings.secretValues,
      this.order.provider.apiKey,
      // Never given to a command; kept out of any output all the same.
      this.order.project.forge?.token ?? "",
      // The project's own variables: its commands get them, its events never show them.
      ...Object.values(this.order.project.env),
      // Given to the MCP servers that need them, and to nothing else.
      ...this.order.project.mcpServers.flatMap((server) => [
        ...Object.values(server.env),
        server.bearerToken ?? "",
      ]),
    ].filter((value) => value.length >= 4);
  }
}
