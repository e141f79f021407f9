// The turns of one chat session, kept live: a TurnStore per turn, socket subscriptions for the
// turns still running, and the user's turn_updates stream that announces new turns.
import type { ChatTurn } from "@gadget/protocol";
import { isFinalTurnStatus } from "@gadget/protocol";
import type { ApiClient } from "../api/client.ts";
import type { IdeConnection } from "./connection.ts";
import { TurnStore } from "./turn-store.ts";

function createdAtOf(turn: ChatTurn): number {
  const time = new Date(turn.createdAt as unknown as string).getTime();
  return Number.isFinite(time) ? time : 0;
}

/**
 * Owns the TurnStores of a session page.
 * @example
 * const turns = new SessionTurns(sessionId, { api });
 * turns.attach(connection);
 * await turns.load();
 */
export class SessionTurns {
  readonly sessionId: string;
  private readonly api: ApiClient;
  private readonly stores = new Map<string, TurnStore>();
  private readonly following = new Map<string, () => void>();
  private readonly storeWatchers = new Map<string, () => void>();
  private readonly listeners = new Set<() => void>();
  private list: TurnStore[] = [];
  private connection: IdeConnection | null = null;
  private detachSession: (() => void) | null = null;

  constructor(sessionId: string, options: { api: ApiClient }) {
    this.sessionId = sessionId;
    this.api = options.api;
  }

  /** The session's turns, oldest first. The array changes identity when a turn is added. */
  getTurns = (): TurnStore[] => this.list;

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  get(turnId: string): TurnStore | undefined {
    return this.stores.get(turnId);
  }

  /** Reads the session's turns over REST (a reload shows everything stored so far). */
  async load(): Promise<void> {
    const { turns } = await this.api.listTurns(this.sessionId);
    for (const turn of turns) this.upsert(turn);
  }

  /** Adds or updates a turn (from REST, a POST answer or turn_updates). */
  upsert(turn: ChatTurn): TurnStore {
    let store = this.stores.get(turn._id);
    if (store) {
      store.setTurn(turn);
    } else {
      store = new TurnStore(turn, { api: this.api });
      this.stores.set(turn._id, store);
      const watched = store;
      this.storeWatchers.set(
        turn._id,
        store.subscribe(() => this.syncFollow(watched)),
      );
      this.list = [...this.list, store].sort(
        (a, b) => createdAtOf(a.getSnapshot().turn) - createdAtOf(b.getSnapshot().turn),
      );
      this.emit();
    }
    this.syncFollow(store);
    return store;
  }

  /** Uses `connection` for live updates (null while it is being made). */
  attach(connection: IdeConnection | null): void {
    if (connection === this.connection) return;
    this.detachLive();
    this.connection = connection;
    if (!connection) return;
    // turn_updates reach every socket of the user: take the ones of this session. (A session
    // subscription would replay the events of every past turn; running turns replay their own.)
    const stopTurns = connection.onTurn((turn) => {
      if (turn.session === this.sessionId) this.upsert(turn);
    });
    // While the server cannot store a turn's events, the turn says so (nothing is lost meanwhile).
    const stopWaiting = connection.onWaiting(({ turnId, waiting }) => {
      const store = this.stores.get(turnId);
      if (store) store.setTurn({ ...store.getSnapshot().turn, waiting });
    });
    this.detachSession = () => {
      stopTurns();
      stopWaiting();
    };
    for (const store of this.stores.values()) this.syncFollow(store);
  }

  /** Stops every subscription and timer and forgets the turns (load() starts again). */
  dispose(): void {
    this.detachLive();
    this.connection = null;
    for (const stop of this.storeWatchers.values()) stop();
    this.storeWatchers.clear();
    for (const store of this.stores.values()) store.dispose();
    this.stores.clear();
    this.list = [];
    this.emit();
  }

  private detachLive(): void {
    this.detachSession?.();
    this.detachSession = null;
    for (const stop of this.following.values()) stop();
    this.following.clear();
  }

  /** Running turns are followed over the socket; finished ones are read on demand. */
  private syncFollow(store: TurnStore): void {
    const { turn } = store.getSnapshot();
    if (!this.connection || this.following.has(turn._id)) return;
    if (isFinalTurnStatus(turn.status)) return;
    this.following.set(turn._id, store.follow(this.connection));
  }

  private emit(): void {
    for (const listener of this.listeners) listener();
  }
}
