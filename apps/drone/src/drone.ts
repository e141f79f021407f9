// The drone's runtime: one Socket.IO connection to the server's /drones namespace; work orders
// in, events out; reconnects with jittered backoff and tells the server which turns it still runs.
import path from "node:path";
import {
  type Ack,
  ackHandler,
  approvalDecisionSchema,
  DRONE_SOCKET_PATH,
  DRONES_NAMESPACE,
  type DroneUpdateRefusal,
  droneAuthorization,
  droneReconciledSchema,
  type IWorkOrder,
  PROTOCOL_VERSION,
  turnControlSchema,
  turnSteeringSchema,
  UserError,
  workOrderSchema,
} from "@gadget/protocol";
import { io } from "socket.io-client";
import { finalRefusal } from "./connection/refusal.ts";
import { UpdateRefusalReport } from "./connection/update-report.ts";
import type { DroneSettings } from "./drone-settings.ts";
import { type DroneRequest, type DroneRequestHandlers, machineRequests } from "./requests.ts";
import { EventJournal } from "./streaming/journal.ts";
import { LeftoverSenders, withFields } from "./streaming/leftovers.ts";
import type { DroneSocket } from "./streaming/sender.ts";
import { ActiveTurn } from "./turn-runner.ts";
import { checkoutSlugs } from "./workspace/checkouts.ts";

export type { DroneSettings } from "./drone-settings.ts";

/** Resolves after `ms`, without keeping the process alive. */
function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

export class Drone {
  readonly turns = new Map<string, ActiveTurn>();
  private socket!: DroneSocket;
  /** An update it refused, until the server has heard of it. */
  private readonly updateRefusal = new UpdateRefusalReport(() => this.socket);
  private journal: EventJournal;
  private accepting = true;
  private heartbeat: NodeJS.Timeout | undefined;
  /** Senders of journals left by an earlier run of the drone. */
  private leftovers!: LeftoverSenders;
  /**
   * Whether this connection was reconciled: events go out only then, since the server may have
   * numbered a turn's events of its own (`drone_lost`, `drone_back`) while it was away.
   */
  private reconciled = false;
  private reconcileFallback: NodeJS.Timeout | undefined;
  private rejectStart: ((error: Error) => void) | undefined;
  private resolveStopped!: (error: Error) => void;

  /** The one turn of an ephemeral drone, once it took it. */
  private ephemeralTurn: string | null = null;
  private resolveSpent!: () => void;
  /** An ephemeral drone's turn has finished and its events are sent: the drone may exit. */
  readonly spent = new Promise<void>((resolve) => {
    this.resolveSpent = resolve;
  });

  /** Resolves with the reason when the connection ends for good (revoked, refused). */
  readonly stopped = new Promise<Error>((resolve) => {
    this.resolveStopped = resolve;
  });

  constructor(private readonly settings: DroneSettings) {
    this.journal = new EventJournal(
      settings.journalDirectory ?? path.join(settings.config.workspace, ".journal"),
    );
  }

  /** Connects; resolves on the first successful connection, rejects on a final refusal. */
  async start(): Promise<void> {
    const { config } = this.settings;
    const url = new URL(DRONES_NAMESPACE, config.server).toString();
    this.socket = io(url, {
      path: DRONE_SOCKET_PATH,
      // The server checks the credential on the HTTP request itself, before any message.
      extraHeaders: { authorization: droneAuthorization(config.droneId, config.credential) },
      // WebSocket only: no sticky sessions needed behind a load balancer.
      transports: ["websocket"],
      reconnectionDelay: this.settings.reconnectDelayMs ?? 1000,
      reconnectionDelayMax: this.settings.reconnectDelayMaxMs ?? 60_000,
      randomizationFactor: 0.5,
      // A function, so every reconnect sends the turns running now.
      auth: (callback) => {
        void Promise.all([this.workspaces(), this.leftovers.cutTurns()]).then(([workspaces, cut]) =>
          callback({
            droneId: config.droneId,
            credential: config.credential,
            protocolVersion: PROTOCOL_VERSION,
            version: this.settings.version,
            hostname: this.settings.hostname,
            platform: this.settings.platform,
            capacity: this.settings.ephemeral ? 1 : config.capacity,
            sandbox: this.settings.sandbox.info,
            activeTurns: this.runningTurns(),
            journaledTurns: cut,
            workspaces,
            labels: this.settings.labels ?? [],
            ephemeral: this.settings.ephemeral ?? false,
            draining: this.draining,
          }),
        );
      },
    });
    // Listen for the first connection before anything else awaits, so it cannot slip past.
    const connected = new Promise<void>((resolve, reject) => {
      this.rejectStart = reject;
      this.socket.once("connect", () => resolve());
    });
    this.listen();
    this.leftovers = new LeftoverSenders(this.socket, {
      ...this.settings.sending,
      canSend: this.canSend,
    });
    await this.leftovers.load(this.journal, (turnId) => this.turns.has(turnId));
    await connected;
    this.rejectStart = undefined;
    this.heartbeat = setInterval(() => void this.beat(), this.settings.heartbeatMs ?? 10_000);
    this.heartbeat.unref();
  }

  private listen(): void {
    const socket = this.socket;
    socket.on("connect", () => this.connected());
    socket.on("disconnect", (reason) => this.disconnected(reason));
    socket.on("connect_error", (error: Error & { data?: { code?: string } }) =>
      this.refused(error),
    );
    socket.on("revoked", ({ reason }) => this.revoked(reason));
    const requests = this.requests();
    for (const event of Object.keys(requests) as DroneRequest[]) socket.on(event, requests[event]);
  }

  /** What the server asks of this drone: one handler per request, all behind the one ack edge. */
  private requests(): DroneRequestHandlers {
    const log = this.settings.logger;
    return {
      work_order: ackHandler(log, workOrderSchema, "work order", (order) =>
        this.acceptWorkOrder(order),
      ),
      turn_cancel: ackHandler(log, turnControlSchema, "cancel", async ({ turnId }) => {
        this.turns.get(turnId)?.cancel();
        return {};
      }),
      // Told before the work order that gives the turn back, on the same connection.
      turn_superseded: ackHandler(log, turnControlSchema, "superseded", async ({ turnId }) => {
        this.turns.get(turnId)?.supersede();
        return {};
      }),
      reconciled: ackHandler(log, droneReconciledSchema, "reconciled", async ({ rebased }) => {
        for (const rebase of rebased) {
          this.turns.get(rebase.turnId)?.rebase(rebase.storedUpTo, rebase.nextSeq);
        }
        this.linkUp();
        return {};
      }),
      approval_decision: ackHandler(
        log,
        approvalDecisionSchema,
        "approval decision",
        async (decision) => {
          const turn = this.turns.get(decision.turnId);
          if (!turn) throw new UserError("not_found", "This drone is not running that turn");
          turn.decide(decision.approvalId, {
            approve: decision.approve,
            ...(decision.input === undefined ? {} : { input: decision.input }),
            ...(decision.alwaysAllow ? { alwaysAllow: true } : {}),
          });
          return {};
        },
      ),
      // Answered once journaled: the server keeps the message pending until the turn's
      // `user_message` event says the model took it, and sends it again after a reconnect.
      turn_message: ackHandler(log, turnSteeringSchema, "turn message", async (message) => {
        const turn = this.turns.get(message.turnId);
        if (!turn) throw new UserError("not_found", "This drone is not running that turn");
        await turn.steer(message);
        return {};
      }),
      ...machineRequests(log, this.settings.config.workspace, () => this.beat()),
    };
  }

  private connected(): void {
    this.settings.logger.info({ server: this.settings.config.server }, "connected");
    this.settings.onConnection?.({ connected: true });
    void this.updateRefusal.send();
    // Events wait for the server's `reconciled`; a server that never says it is not waited on long.
    clearTimeout(this.reconcileFallback);
    this.reconcileFallback = setTimeout(() => this.linkUp(), 10_000);
    this.reconcileFallback.unref();
  }

  /** The connection is reconciled: unacknowledged events go out. */
  private linkUp(): void {
    clearTimeout(this.reconcileFallback);
    if (!this.socket.connected) return;
    this.reconciled = true;
    this.leftovers.settleCut();
    for (const turn of this.turns.values()) turn.resend();
    this.leftovers.notify();
  }

  /** Whether events may be sent now. */
  private readonly canSend = (): boolean => this.socket.connected && this.reconciled;

  private disconnected(reason: string): void {
    this.reconciled = false;
    this.settings.logger.warn({ reason }, "disconnected");
    if (reason === "io client disconnect") return; // we closed it on purpose
    this.settings.onConnection?.({ connected: false, reason });
    // The server closed us on purpose (another connection replaced us, or we were kicked):
    // Socket.IO does not retry that by itself.
    if (reason === "io server disconnect" && this.accepting) {
      setTimeout(() => this.socket.connect(), this.settings.reconnectDelayMs ?? 1000).unref();
    }
  }

  private refused(error: Error & { data?: { code?: string } }): void {
    this.settings.onConnection?.({ connected: false, reason: error.message });
    void finalRefusal(error, this.settings.config).then((final) => {
      if (final) {
        this.socket.disconnect();
        this.stop(final);
      } else {
        this.settings.logger.warn({ err: error.message }, "cannot connect yet; retrying");
      }
    });
  }

  private revoked(reason: string): void {
    this.settings.logger.error({ reason }, "this drone was revoked");
    for (const turn of this.turns.values()) turn.cancel();
    this.socket.disconnect();
    this.stop(new UserError("forbidden", `This drone was revoked: ${reason}`));
  }

  private async acceptWorkOrder(order: IWorkOrder): Promise<object> {
    const running = this.turns.get(order.turnId);
    if (running && !running.superseded) return {}; // the same order again: already running
    // Given back from its checkpoint: the superseded run lets go of its journal and worktree first.
    if (running) await running.finished;
    if (!this.accepting) throw new UserError("unavailable", "This drone is shutting down");
    if (this.settings.ephemeral && ![null, order.turnId].includes(this.ephemeralTurn)) {
      throw new UserError("unavailable", "This ephemeral drone has taken its one turn");
    }
    // Dispatched again (resumed): what an earlier run left for this turn is superseded.
    this.leftovers.supersede(order.turnId);
    // Ended turns still sending their last events hold no slot: the server freed it on `done`.
    const holding = [...this.turns.values()].filter((turn) => !turn.ended).length;
    if (holding >= this.settings.config.capacity) {
      throw new UserError(
        "at_capacity",
        `This drone runs at most ${this.settings.config.capacity} turn(s) at once`,
      );
    }
    const turn = new ActiveTurn(order, {
      workspaceRoot: this.settings.config.workspace,
      journal: this.journal,
      socket: this.socket,
      sandbox: this.settings.sandbox,
      hiddenPaths: [...this.settings.hiddenPaths, this.journal.directory],
      // Every line the turn logs names it.
      logger: withFields(this.settings.logger, { turnId: order.turnId }),
      secretValues: [this.settings.config.credential],
      ...(this.settings.mcp ? { mcp: this.settings.mcp } : {}),
      ...(this.settings.tunables ? { tunables: this.settings.tunables } : {}),
      sending: { ...this.settings.sending, canSend: this.canSend },
      ...(this.settings.verifyRepairAttempts === undefined
        ? {}
        : { verifyRepairAttempts: this.settings.verifyRepairAttempts }),
      ...(this.settings.onProgress ? { onProgress: this.settings.onProgress } : {}),
      onFinished: (turnId) => {
        this.settings.logger.info({ turnId }, "turn finished on this drone");
        const superseded = this.turns.get(turnId)?.superseded;
        this.turns.delete(turnId);
        if (superseded) return; // its rerun comes with the work order that superseded it
        this.settings.onTurnFinished?.(turnId);
        if (turnId === this.ephemeralTurn) {
          this.accepting = false;
          this.resolveSpent();
          return;
        }
        void this.beat();
      },
    });
    if (this.settings.ephemeral) this.ephemeralTurn = order.turnId;
    this.turns.set(order.turnId, turn);
    // The server keeps a turn's lease for its drone while the drone's last heartbeat names it; say
    // so now (once the work order's answer is out) rather than at the next beat, seconds away.
    setImmediate(() => void this.beat());
    this.settings.logger.info(
      { turnId: order.turnId, project: order.project.slug },
      "work order accepted",
    );
    return {};
  }

  /** Renews the server's lease on running turns; cancels what the server says is cancelled. */
  private async beat(): Promise<void> {
    if (!this.socket.connected) return;
    try {
      const answer = (await this.socket.timeout(10_000).emitWithAck("heartbeat", {
        activeTurns: this.runningTurns(),
        workspaces: await this.workspaces(),
        draining: this.draining,
      })) as Ack<{
        cancelledTurns: string[];
      }>;
      if (answer.ok) for (const turnId of answer.cancelledTurns) this.turns.get(turnId)?.cancel();
    } catch {
      // Missed heartbeat; the next one or a reconnect catches up.
    }
  }

  /** The turns this drone runs for the server (not the superseded runs ending unheard). */
  private runningTurns(): string[] {
    return [...this.turns.values()].filter((turn) => !turn.superseded).map((turn) => turn.turnId);
  }

  /** Project slugs with a checkout here, so the server prefers this drone for them. */
  private workspaces(): Promise<string[]> {
    return checkoutSlugs(this.settings.config.workspace);
  }

  /** An update this drone refused (`start --auto-update`): the server and the drones page hear. */
  reportUpdateRefused(refusal: DroneUpdateRefusal): void {
    this.updateRefusal.report(refusal);
  }

  /** Whether events of an earlier run are still waiting for the server. */
  get hasUnsentLeftovers(): boolean {
    return this.leftovers.size > 0;
  }

  /**
   * Stops taking work. `cancel: false` lets running turns finish (first SIGTERM/SIGINT) for up to
   * the drain time; `cancel: true` cancels them (second signal), also during a drain under way.
   * Resolves when they have ended and their events are sent, or when the events' grace is over
   * (they stay journaled): a shutdown always ends, whatever the server or the connection does.
   */
  shutdown(options: { cancel: boolean }): Promise<void> {
    this.accepting = false;
    if (!this.draining) {
      // The server hears at once: no new turn comes, and the drones page says `draining`.
      this.draining = true;
      void this.beat();
    }
    if (options.cancel) this.cancelAll();
    this.shuttingDown ??= this.drainAndClose();
    return this.shuttingDown;
  }

  private shuttingDown: Promise<void> | undefined;
  /** Stopping: running turns finish, no new one is taken. */
  private draining = false;
  private cancelRequested: (() => void) | undefined;
  private readonly cancelling = new Promise<void>((resolve) => {
    this.cancelRequested = resolve;
  });

  /** Ends the running turns as `drone_shutdown` (the drone is stopping, not the user). */
  private cancelAll(): void {
    for (const turn of this.turns.values()) turn.shutDown();
    this.cancelRequested?.();
  }

  private async drainAndClose(): Promise<void> {
    const finished = Promise.all([...this.turns.values()].map((turn) => turn.finished));
    await Promise.race([finished, this.cancelling, delay(this.settings.drainMs ?? 600_000)]);
    this.cancelAll();
    const grace = delay(this.settings.eventsGraceMs ?? 10_000);
    // Events of an earlier run get a moment too; what does not go out stays journaled.
    const leftovers = this.leftovers.drained();
    await Promise.race([Promise.all([finished, leftovers]), grace]);
    this.close();
  }

  /** Disconnects at once. */
  close(): void {
    clearInterval(this.heartbeat);
    this.socket?.disconnect();
  }

  private stop(error: Error): void {
    this.accepting = false;
    this.close();
    this.rejectStart?.(error);
    this.resolveStopped(error);
  }
}
