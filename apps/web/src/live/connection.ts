// The browser's /ide Socket.IO connection: one socket, subscriptions that survive reconnects,
// and a connection state the UI shows as a banner.
import type {
  Ack,
  ChatTurn,
  Drone,
  IdeClientToServerEvents,
  IdeServerToClientEvents,
  TurnActivity,
  TurnEventsMessage,
  TurnWaiting,
} from "@gadget/protocol";
import { IDE_NAMESPACE } from "@gadget/protocol";
import { io, type Socket } from "socket.io-client";

export type ConnectionState =
  | "connecting"
  | "connected"
  /** Was connected and lost it; socket.io is retrying. */
  | "reconnecting"
  /** The server refused the token. */
  | "unauthorized"
  | "closed";

export interface TurnSubscriptionHandlers {
  /** The seq to resume after; read at every (re)subscribe so nothing is replayed twice. */
  after: () => number;
  /** A relayed batch (or catch-up page) of the turn's events, in seq order, as it arrived. */
  onEvents?: (message: TurnEventsMessage) => void;
  onTurn?: (turn: ChatTurn) => void;
  /** The server refused the subscription (e.g. the turn does not exist). */
  onError?: (message: string) => void;
}

export interface IdeConnectionOptions {
  token: string;
  /** Origin of the server; "" (default) is the page's origin. */
  baseUrl?: string;
  /** Milliseconds to wait for a subscribe acknowledgement (default 10,000). */
  ackTimeoutMs?: number;
}

type IdeSocket = Socket<IdeServerToClientEvents, IdeClientToServerEvents>;

interface Subscription {
  key: string;
  request: { turnId: string };
  handlers: TurnSubscriptionHandlers;
}

/**
 * One /ide connection per logged-in tab.
 * @example
 * const connection = new IdeConnection({ token });
 * const stop = connection.subscribeTurn(turnId, { after: () => view.lastSeq, onEvents });
 */
export class IdeConnection {
  private readonly socket: IdeSocket;
  private readonly ackTimeoutMs: number;
  private readonly subscriptions = new Map<string, Set<Subscription>>();
  private readonly stateListeners = new Set<(state: ConnectionState) => void>();
  private readonly droneListeners = new Set<(drone: Drone) => void>();
  private readonly turnListeners = new Set<(turn: ChatTurn) => void>();
  private readonly waitingListeners = new Set<
    (message: { turnId: string; waiting: TurnWaiting | null }) => void
  >();
  private readonly activityListeners = new Set<(activity: TurnActivity[]) => void>();
  private currentState: ConnectionState = "connecting";
  private everConnected = false;
  private closed = false;

  constructor(options: IdeConnectionOptions) {
    this.ackTimeoutMs = options.ackTimeoutMs ?? 10_000;
    this.socket = io(`${options.baseUrl ?? ""}${IDE_NAMESPACE}`, {
      auth: { token: options.token },
      reconnectionDelay: 500,
      reconnectionDelayMax: 5_000,
    });
    this.socket.on("connect", () => {
      this.everConnected = true;
      this.setState("connected");
      for (const group of this.subscriptions.values()) {
        for (const subscription of group) void this.sendSubscribe(subscription);
      }
      if (this.activityListeners.size > 0) this.sendActivity("subscribe");
    });
    this.socket.on("disconnect", (reason) => {
      if (this.closed) return;
      this.setState(this.everConnected ? "reconnecting" : "connecting");
      // socket.io does not retry on its own when the server closed the socket on purpose.
      if (reason === "io server disconnect") {
        setTimeout(() => {
          if (!this.closed && !this.socket.connected) this.socket.connect();
        }, 1_000);
      }
    });
    this.socket.on("connect_error", (error) => {
      if (this.closed) return;
      if (/unauthori[sz]ed|invalid token|401/i.test(error.message)) {
        this.setState("unauthorized");
        this.socket.disconnect();
        return;
      }
      this.setState(this.everConnected ? "reconnecting" : "connecting");
    });
    this.socket.on("turn_events", (message) => this.dispatchEvents(message));
    this.socket.on("turn_updates", ({ turns }) => {
      for (const turn of turns) this.dispatchTurn(turn);
    });
    this.socket.on("drone_update", ({ drone }) => {
      for (const listener of this.droneListeners) listener(drone);
    });
    this.socket.on("turn_activity", ({ activity }) => {
      for (const listener of this.activityListeners) listener(activity);
    });
    this.socket.on("turn_waiting", (message) => {
      for (const listener of this.waitingListeners) listener(message);
    });
  }

  /** Calls `listener` when a turn of the user starts or stops waiting on an outage of the server's storage. */
  onWaiting(
    listener: (message: { turnId: string; waiting: TurnWaiting | null }) => void,
  ): () => void {
    this.waitingListeners.add(listener);
    return () => this.waitingListeners.delete(listener);
  }

  get state(): ConnectionState {
    return this.currentState;
  }

  /** Calls `listener` on every state change; returns the unsubscribe function. */
  onState(listener: (state: ConnectionState) => void): () => void {
    this.stateListeners.add(listener);
    return () => this.stateListeners.delete(listener);
  }

  /** Calls `listener` for each drone_update (drones come and go, and change load). */
  onDrone(listener: (drone: Drone) => void): () => void {
    this.droneListeners.add(listener);
    return () => this.droneListeners.delete(listener);
  }

  /**
   * Calls `listener` for every turn update of this user (the server sends them to all of the
   * user's sockets), e.g. to learn about turns started in another tab.
   */
  onTurn(listener: (turn: ChatTurn) => void): () => void {
    this.turnListeners.add(listener);
    return () => this.turnListeners.delete(listener);
  }

  /**
   * Calls `listener` with what the user's turns do now (pass, tool, approvals) as their events
   * are stored: one subscription on the socket however many listen, kept across reconnects.
   */
  subscribeActivity(listener: (activity: TurnActivity[]) => void): () => void {
    const first = this.activityListeners.size === 0;
    this.activityListeners.add(listener);
    if (first && this.socket.connected) this.sendActivity("subscribe");
    return () => {
      if (!this.activityListeners.delete(listener) || this.activityListeners.size > 0) return;
      if (this.socket.connected) this.sendActivity("unsubscribe");
    };
  }

  private sendActivity(what: "subscribe" | "unsubscribe"): void {
    this.socket.emit(what, { activity: true }, () => {});
  }

  /** Follows one turn: its events after `handlers.after()` and its record updates. */
  subscribeTurn(turnId: string, handlers: TurnSubscriptionHandlers): () => void {
    return this.add({ key: `turn:${turnId}`, request: { turnId }, handlers });
  }

  /** Drops the socket for good (log out). */
  close(): void {
    this.closed = true;
    this.setState("closed");
    this.socket.disconnect();
    this.stateListeners.clear();
  }

  private add(subscription: Subscription): () => void {
    let group = this.subscriptions.get(subscription.key);
    if (!group) {
      group = new Set();
      this.subscriptions.set(subscription.key, group);
    }
    group.add(subscription);
    if (this.socket.connected) void this.sendSubscribe(subscription);
    return () => {
      const current = this.subscriptions.get(subscription.key);
      if (!current) return;
      current.delete(subscription);
      if (current.size > 0) return;
      this.subscriptions.delete(subscription.key);
      if (this.socket.connected) {
        this.socket.emit("unsubscribe", { ...subscription.request, after: 0 }, () => {});
      }
    };
  }

  private async sendSubscribe(subscription: Subscription): Promise<void> {
    let answer: Ack;
    try {
      answer = await this.socket.timeout(this.ackTimeoutMs).emitWithAck("subscribe", {
        ...subscription.request,
        after: subscription.handlers.after(),
      });
    } catch {
      // No acknowledgement in time: the connection is probably going down; the next
      // "connect" subscribes again.
      return;
    }
    if (!answer.ok) subscription.handlers.onError?.(answer.error.message);
  }

  private dispatchEvents(message: TurnEventsMessage): void {
    const group = this.subscriptions.get(`turn:${message.turnId}`);
    if (!group) return;
    for (const subscription of group) subscription.handlers.onEvents?.(message);
  }

  private dispatchTurn(turn: ChatTurn): void {
    const group = this.subscriptions.get(`turn:${turn._id}`);
    if (group) for (const subscription of group) subscription.handlers.onTurn?.(turn);
    for (const listener of this.turnListeners) listener(turn);
  }

  private setState(state: ConnectionState): void {
    if (state === this.currentState) return;
    this.currentState = state;
    for (const listener of this.stateListeners) listener(state);
  }
}
