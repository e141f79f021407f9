// Per-turn live state: the ChatTurn record plus its folded events, fed by the socket and REST,
// read by React through useSyncExternalStore.
import type { ChatTurn, TurnEvent } from "@gadget/protocol";
import { isFinalTurnStatus } from "@gadget/protocol";
import type { ApiClient } from "../api/client.ts";
import { EVENTS_PAGE } from "../api/client.ts";
import type { IdeConnection } from "./connection.ts";
import { applyEvents, emptyTurnView, gapAfter, type TurnView } from "./turn-view.ts";

export interface TurnSnapshot {
  turn: ChatTurn;
  view: TurnView;
  /** Whether every stored event has been read (past turns load theirs on demand). */
  eventsLoaded: boolean;
  /** A problem reading events, in words. */
  loadError: string | null;
}

export interface TurnStoreOptions {
  api: ApiClient;
  /** How long events may wait past a gap before the missing ones are read over REST (ms). */
  gapWaitMs?: number;
}

/**
 * Picks the newer of two versions of a turn record: a stale copy (a slow REST answer after a
 * socket update) must not undo a newer one. A final turn becomes live again only by resume.
 */
export function newerTurn(current: ChatTurn, incoming: ChatTurn): ChatTurn {
  const currentSeq = current.lastSeq ?? 0;
  const incomingSeq = incoming.lastSeq ?? 0;
  if (isFinalTurnStatus(current.status) && !isFinalTurnStatus(incoming.status)) {
    const resumed =
      incomingSeq > currentSeq || incoming.status === "queued" || incoming.status === "dispatched";
    return resumed ? incoming : current;
  }
  if (current.lastSeq !== undefined && incoming.lastSeq !== undefined && incomingSeq < currentSeq) {
    return current;
  }
  return incoming;
}

/**
 * The live state of one turn.
 * @example
 * const store = new TurnStore(turn, { api });
 * store.follow(connection); // live events after store.view.lastSeq
 */
export class TurnStore {
  private snapshot: TurnSnapshot;
  private readonly listeners = new Set<() => void>();
  private readonly api: ApiClient;
  private readonly gapWaitMs: number;
  private gapTimer: ReturnType<typeof setTimeout> | null = null;
  private loading: Promise<void> | null = null;

  constructor(turn: ChatTurn, options: TurnStoreOptions) {
    this.api = options.api;
    this.gapWaitMs = options.gapWaitMs ?? 1_500;
    this.snapshot = { turn, view: emptyTurnView(), eventsLoaded: false, loadError: null };
  }

  get id(): string {
    return this.snapshot.turn._id;
  }

  get view(): TurnView {
    return this.snapshot.view;
  }

  getSnapshot = (): TurnSnapshot => this.snapshot;

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  /** Applies events from any source; duplicates and old ones change nothing. */
  applyEvents(events: readonly TurnEvent[]): void {
    const view = applyEvents(this.snapshot.view, events);
    if (view === this.snapshot.view) return;
    this.set({ ...this.snapshot, view });
    this.watchGap();
  }

  /** Takes a newer version of the turn record (turn_updates, REST). */
  setTurn(turn: ChatTurn): void {
    const next = newerTurn(this.snapshot.turn, turn);
    if (next === this.snapshot.turn) return;
    this.set({ ...this.snapshot, turn: next });
  }

  /** Subscribes to this turn's live events, resuming after the last applied seq. */
  follow(connection: IdeConnection): () => void {
    return connection.subscribeTurn(this.id, {
      after: () => this.snapshot.view.lastSeq,
      // A whole batch folds into one new view: one render, not one per event.
      onEvents: (message) => this.applyEvents(message.events),
      onTurn: (turn) => this.setTurn(turn),
      onError: (message) => this.set({ ...this.snapshot, loadError: message }),
    });
  }

  /** Reads every stored event after the last applied one over REST (past turns, gaps). */
  loadEvents(): Promise<void> {
    this.loading ??= this.readPages().finally(() => {
      this.loading = null;
    });
    return this.loading;
  }

  dispose(): void {
    if (this.gapTimer) clearTimeout(this.gapTimer);
    this.listeners.clear();
  }

  private async readPages(): Promise<void> {
    try {
      for (;;) {
        const { events } = await this.api.listEvents(this.id, this.snapshot.view.lastSeq);
        this.applyEvents(events);
        if (events.length < EVENTS_PAGE) break;
      }
      this.set({ ...this.snapshot, eventsLoaded: true, loadError: null });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.set({ ...this.snapshot, loadError: `Could not read this turn's steps: ${message}` });
    }
  }

  private watchGap(): void {
    if (gapAfter(this.snapshot.view) === null) {
      if (this.gapTimer) clearTimeout(this.gapTimer);
      this.gapTimer = null;
      return;
    }
    // Events past a gap usually mean the missing ones are a moment behind; if they do not
    // come, read them from the server's store.
    this.gapTimer ??= setTimeout(() => {
      this.gapTimer = null;
      if (gapAfter(this.snapshot.view) !== null) void this.loadEvents();
    }, this.gapWaitMs);
  }

  private set(snapshot: TurnSnapshot): void {
    this.snapshot = snapshot;
    for (const listener of this.listeners) listener();
  }
}
