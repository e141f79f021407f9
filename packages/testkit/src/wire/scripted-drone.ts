// A minimal drone for tests and benchmarks: speaks the /drones namespace with socket.io-client,
// records what the server sends, and streams the events a test scripts. No agent, no workspace.
import {
  type Ack,
  type AgentEvent,
  type ApprovalDecision,
  DRONE_SOCKET_PATH,
  DRONES_NAMESPACE,
  type DroneClientToServerEvents,
  type DroneServerToClientEvents,
  droneAuthorization,
  type FileRequest,
  type FileResponse,
  type GitRemoteCheckRequest,
  type GitRemoteCheckResult,
  type ITurnMessage,
  type IWorkOrder,
  PROTOCOL_VERSION,
  type ProjectCloneRequest,
  type ProjectCloneResult,
  type ProjectCommandsAnswer,
  type ProjectCommandsRequest,
  type ProviderCheckRequest,
  type ProviderCheckResult,
  type SandboxInfo,
  type SessionWorktreeRequest,
  type SessionWorktreeState,
  type TurnSteering,
} from "@gadget/protocol";
import { io, type Socket } from "socket.io-client";

export interface ScriptedDroneOptions {
  /** The server's base URL. */
  url: string;
  droneId: string;
  credential: string;
  capacity?: number;
  workspaces?: string[];
  /** Turns the drone says it still runs when (re)connecting. */
  activeTurns?: string[];
  /** Turns its journal names as cut by a restart (the handshake's `journaledTurns`). */
  journaledTurns?: string[];
  /** Default: the protocol this build speaks. */
  protocolVersion?: number;
  /** Its version as it says in the handshake; default `0.0.0-test`. */
  version?: string;
  /** The labels it says about itself (`os=linux`…), as gadget-drone's automatic ones. */
  labels?: string[];
  /** `start --ephemeral`: one turn. */
  ephemeral?: boolean;
  /** What it reports confining commands with. Default: none (it runs no commands). */
  sandbox?: SandboxInfo;
  /** Heartbeat period; 0 sends none. Default 1 000 ms. */
  heartbeatMs?: number;
  /** Answer to each work order; default accept. */
  onWorkOrder?: (order: IWorkOrder) => Ack | Promise<Ack> | "ignore";
  /** Hears each steering message as it arrives (it is always accepted). */
  onTurnMessage?: (message: TurnSteering) => void;
  /** Answer to file requests; default `not_found`. */
  onFileRequest?: (
    request: FileRequest,
  ) => Ack<{ result: FileResponse }> | Promise<Ack<{ result: FileResponse }>>;
  /**
   * Answer to provider checks; default: `unavailable`. (This package cannot check as gadget-drone
   * does: the agent's tests depend on it. `@gadget/server/testing` passes the agent's check.)
   */
  onProviderCheck?: (
    request: ProviderCheckRequest,
  ) => Ack<{ result: ProviderCheckResult }> | Promise<Ack<{ result: ProviderCheckResult }>>;
  /** Answer to `session_worktree`; default `not_found` (no worktree of the session here). */
  onSessionWorktree?: (
    request: SessionWorktreeRequest,
  ) => Ack<{ result: SessionWorktreeState }> | Promise<Ack<{ result: SessionWorktreeState }>>;
  /** Answer to a project's git URL check; default: the URL answers. */
  onGitRemoteCheck?: (
    request: GitRemoteCheckRequest,
  ) => Ack<{ result: GitRemoteCheckResult }> | Promise<Ack<{ result: GitRemoteCheckResult }>>;
  /** Answer to "Clone now"; default: cloned. */
  onProjectClone?: (
    request: ProjectCloneRequest,
  ) => Ack<{ result: ProjectCloneResult }> | Promise<Ack<{ result: ProjectCloneResult }>>;
  /** Answer to a project's `/name` commands; default `not_found` (no checkout here). */
  onProjectCommands?: (
    request: ProjectCommandsRequest,
  ) => Ack<{ result: ProjectCommandsAnswer }> | Promise<Ack<{ result: ProjectCommandsAnswer }>>;
  /** Answer to approval decisions; default ok. */
  onApprovalDecision?: (decision: ApprovalDecision) => Ack;
  /** Answer to cancels; default ok (the test then streams `done`). */
  onCancel?: (turnId: string) => Ack;
}

/** Why the server refused a connection: Socket.IO's message and `data.code`. */
export class DroneRefused extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
    this.name = "DroneRefused";
  }
}

type DroneSocket = Socket<DroneServerToClientEvents, DroneClientToServerEvents>;

/** A scripted drone. @example const drone = await ScriptedDrone.connect({ url, droneId, credential }); const order = await drone.nextWorkOrder(); */
export class ScriptedDrone {
  readonly workOrders: IWorkOrder[] = [];
  readonly cancels: string[] = [];
  /** Turns given back from their checkpoint while this drone still ran them (`turn_superseded`). */
  readonly superseded: string[] = [];
  readonly approvalDecisions: ApprovalDecision[] = [];
  /** Steering messages received, in order (re-sent ones again). */
  readonly turnMessages: TurnSteering[] = [];
  readonly fileRequests: FileRequest[] = [];
  readonly providerChecks: ProviderCheckRequest[] = [];
  readonly remoteChecks: GitRemoteCheckRequest[] = [];
  readonly cloneRequests: ProjectCloneRequest[] = [];
  readonly revocations: string[] = [];
  /** Turns this drone runs, with the seq its next event gets. */
  readonly running = new Map<string, number>();
  private readonly waiters: Array<(order: IWorkOrder) => void> = [];
  /** Orders accepted while nobody waited in nextWorkOrder(), oldest first. */
  private readonly untaken: IWorkOrder[] = [];
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private disconnectReason: string | null = null;
  private readonly disconnectWaiters: Array<(reason: string) => void> = [];

  private constructor(
    readonly socket: DroneSocket,
    readonly options: ScriptedDroneOptions,
  ) {}

  /** Connects; rejects with DroneRefused when the server refuses the handshake. */
  static connect(options: ScriptedDroneOptions): Promise<ScriptedDrone> {
    const socket: DroneSocket = io(`${options.url}${DRONES_NAMESPACE}`, {
      path: DRONE_SOCKET_PATH,
      extraHeaders: { authorization: droneAuthorization(options.droneId, options.credential) },
      auth: {
        droneId: options.droneId,
        credential: options.credential,
        protocolVersion: options.protocolVersion ?? PROTOCOL_VERSION,
        capacity: options.capacity ?? 1,
        workspaces: options.workspaces ?? [],
        activeTurns: options.activeTurns ?? [],
        journaledTurns: options.journaledTurns ?? [],
        hostname: "scripted-host",
        platform: "test",
        version: options.version ?? "0.0.0-test",
        labels: options.labels ?? [],
        ephemeral: options.ephemeral ?? false,
        // It runs no commands; it says so rather than claiming a sandbox.
        sandbox: options.sandbox ?? { kind: "none", version: null, network: "host" },
      },
      transports: ["websocket"],
      reconnection: false,
      forceNew: true,
    });
    const drone = new ScriptedDrone(socket, options);
    for (const turnId of options.activeTurns ?? []) drone.running.set(turnId, 0);
    drone.listen();
    return new Promise((resolve, reject) => {
      socket.once("connect", () => {
        drone.startHeartbeat();
        resolve(drone);
      });
      socket.once("connect_error", (error: Error & { data?: { code?: string } }) => {
        socket.close();
        if (error.data?.code) {
          reject(new DroneRefused(error.message, error.data.code));
          return;
        }
        // Refused at the socket's HTTP request (credential checked there): the reason is what
        // the REST API says, as a real drone asks.
        void fetch(`${options.url}/api/drones/self`, {
          headers: { authorization: droneAuthorization(options.droneId, options.credential) },
        })
          .then(async (response) => {
            const body = (await response.json().catch(() => ({}))) as {
              error?: { code?: string; message?: string };
            };
            reject(new DroneRefused(body.error?.message ?? error.message, body.error?.code));
          })
          .catch(() => reject(new DroneRefused(error.message, undefined)));
      });
    });
  }

  private listen(): void {
    const { socket, options } = this;
    socket.on("work_order", (order, ack) => {
      void (async () => {
        const answer = options.onWorkOrder
          ? await options.onWorkOrder(order)
          : { ok: true as const };
        if (answer === "ignore") return;
        if (answer.ok) {
          this.running.set(order.turnId, order.nextSeq);
          this.workOrders.push(order);
          // Kept for the next nextWorkOrder() when nobody waits yet: a turn can be dispatched
          // before the POST that created it has answered (0012).
          const waiters = this.waiters.splice(0);
          if (waiters.length === 0) this.untaken.push(order);
          for (const waiter of waiters) waiter(order);
        }
        ack(answer);
      })();
    });
    socket.on("turn_cancel", ({ turnId }, ack) => {
      this.cancels.push(turnId);
      ack(options.onCancel ? options.onCancel(turnId) : { ok: true });
    });
    socket.on("turn_superseded", ({ turnId }, ack) => {
      this.superseded.push(turnId);
      this.running.delete(turnId);
      ack({ ok: true });
    });
    socket.on("turn_message", (message, ack) => {
      this.turnMessages.push(message);
      options.onTurnMessage?.(message);
      ack({ ok: true });
    });
    socket.on("approval_decision", (decision, ack) => {
      this.approvalDecisions.push(decision);
      ack(options.onApprovalDecision ? options.onApprovalDecision(decision) : { ok: true });
    });
    socket.on("file_request", (request, ack) => {
      this.fileRequests.push(request);
      void Promise.resolve(
        options.onFileRequest
          ? options.onFileRequest(request)
          : ({ ok: false, error: { code: "not_found", message: "no such file" } } as const),
      ).then(ack);
    });
    socket.on("session_worktree", (request, ack) => {
      void Promise.resolve(
        options.onSessionWorktree
          ? options.onSessionWorktree(request)
          : ({
              ok: false,
              error: { code: "not_found", message: "This drone holds no worktree of the session" },
            } as const),
      ).then(ack);
    });
    socket.on("provider_check", (request, ack) => {
      this.providerChecks.push(request);
      void Promise.resolve(
        options.onProviderCheck
          ? options.onProviderCheck(request)
          : ({
              ok: false,
              error: { code: "unavailable", message: "this scripted drone checks no providers" },
            } as const),
      ).then(ack);
    });
    socket.on("git_remote_check", (request, ack) => {
      this.remoteChecks.push(request);
      void Promise.resolve(
        options.onGitRemoteCheck
          ? options.onGitRemoteCheck(request)
          : { ok: true as const, result: { ok: true as const, defaultBranch: null } },
      ).then(ack);
    });
    socket.on("project_clone", (request, ack) => {
      this.cloneRequests.push(request);
      void Promise.resolve(
        options.onProjectClone
          ? options.onProjectClone(request)
          : {
              ok: true as const,
              result: { outcome: "cloned" as const, message: "Cloned", branch: "main" },
            },
      ).then(ack);
    });
    socket.on("project_commands", (request, ack) => {
      void Promise.resolve(
        options.onProjectCommands
          ? options.onProjectCommands(request)
          : ({
              ok: false,
              error: {
                code: "not_found",
                message: "This drone holds no checkout of that project",
                details: { reason: "no_worktree" },
              },
            } as const),
      ).then(ack);
    });
    socket.on("revoked", ({ reason }) => {
      this.revocations.push(reason);
    });
    socket.on("disconnect", (reason) => {
      this.stopHeartbeat();
      this.disconnectReason = reason;
      for (const waiter of this.disconnectWaiters.splice(0)) waiter(reason);
    });
  }

  private startHeartbeat(): void {
    const period = this.options.heartbeatMs ?? 1000;
    if (period <= 0) return;
    this.heartbeatTimer = setInterval(() => {
      void this.heartbeat().catch(() => undefined);
    }, period);
  }

  private stopHeartbeat(): void {
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = null;
  }

  get connected(): boolean {
    return this.socket.connected;
  }

  /** The next work order accepted (or one already accepted and not yet taken). */
  nextWorkOrder(timeoutMs = 10_000): Promise<IWorkOrder> {
    const waiting = this.untaken.shift();
    if (waiting) return Promise.resolve(waiting);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("no work order arrived")), timeoutMs);
      this.waiters.push((order) => {
        clearTimeout(timer);
        resolve(order);
      });
    });
  }

  /** Sends numbered events as one batch; answers the server's ack. */
  async sendBatch(
    turnId: string,
    events: Array<AgentEvent & { seq: number }>,
  ): Promise<Ack<{ lastSeq: number }>> {
    return this.socket.timeout(10_000).emitWithAck("turn_events", { turnId, events });
  }

  /**
   * Numbers `events` after the turn's last one and sends them; `done` ends the turn here.
   * Seqs are taken at once, so several batches may be in flight (pipelined, like a real drone).
   */
  async stream(turnId: string, events: AgentEvent[]): Promise<Ack<{ lastSeq: number }>> {
    const next = this.running.get(turnId);
    if (next === undefined) throw new Error(`drone does not run turn ${turnId}`);
    const numbered = events.map((event, index) => ({ ...event, seq: next + index }));
    this.running.set(turnId, next + events.length);
    const answer = await this.sendBatch(turnId, numbered);
    if (answer.ok && events.some((event) => event.type === "done")) this.running.delete(turnId);
    if (!answer.ok && this.running.get(turnId) === next + events.length)
      this.running.set(turnId, next);
    return answer;
  }

  checkpoint(turnId: string, messages: ITurnMessage[], state?: unknown): Promise<Ack> {
    return this.socket.timeout(10_000).emitWithAck("turn_checkpoint", {
      turnId,
      messages,
      ...(state === undefined ? {} : { state }),
    });
  }

  heartbeat(activeTurns = [...this.running.keys()]): Promise<Ack<{ cancelledTurns: string[] }>> {
    return this.socket
      .timeout(5_000)
      .emitWithAck("heartbeat", { activeTurns, workspaces: this.options.workspaces ?? [] });
  }

  /** Resolves with the disconnect reason (at once if already disconnected). */
  waitForDisconnect(timeoutMs = 10_000): Promise<string> {
    if (!this.socket.connected && this.disconnectReason)
      return Promise.resolve(this.disconnectReason);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("drone was not disconnected")), timeoutMs);
      this.disconnectWaiters.push((reason) => {
        clearTimeout(timer);
        resolve(reason);
      });
    });
  }

  /** Closes the connection (the server sees a disconnect). */
  close(): void {
    this.stopHeartbeat();
    this.socket.close();
  }

  /** Reconnects as a new connection that lists the turns this drone still runs. */
  reconnect(overrides: Partial<ScriptedDroneOptions> = {}): Promise<ScriptedDrone> {
    this.close();
    return ScriptedDrone.connect({
      ...this.options,
      activeTurns: [...this.running.keys()],
      ...overrides,
    }).then((drone) => {
      for (const [turnId, next] of this.running) drone.running.set(turnId, next);
      return drone;
    });
  }
}
