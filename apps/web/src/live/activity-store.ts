// The Activity page's turns, kept live: the user's live turns and a page of finished ones read over
// REST, then turn_updates (status, stats, changes) and turn_activity notices (pass, tool,
// approvals) applied to their rows. A turn nobody has listed yet makes the live part read again.
// What the socket brings is shown at most once per animation frame: at 100 events/s a page of
// 1,000 turns renders once a frame at most, each changed row once, however many messages it held.
import {
  type ActivityTurn,
  type ChatTurn,
  finalTurnStatuses,
  isFinalTurnStatus,
  type TurnActivity,
  type TurnStatus,
} from "@gadget/protocol";
import type { ActivityQuery, ApiClient } from "../api/client.ts";
import type { IdeConnection } from "./connection.ts";

export const liveTurnStatuses: readonly TurnStatus[] = [
  "queued",
  "dispatched",
  "processing",
  "awaiting_approval",
];

/** Finished turns per page. */
const finishedPage = 50;
/** Live turns are read whole, up to this many pages of 200. */
const livePages = 10;
/** How long new turns may gather before the live part is read again. */
const refreshDelayMs = 250;

export interface ActivityFilters {
  project?: string;
  drone?: string;
  /** Statuses to show; empty or absent: all. */
  status?: readonly TurnStatus[];
}

export interface ActivitySnapshot {
  /** Running, then awaiting approval, then queued; newest first within each. */
  live: ActivityTurn[];
  /** Newest first. */
  finished: ActivityTurn[];
  loading: boolean;
  error: string | null;
  /** Whether older finished turns can be read. */
  hasMore: boolean;
}

const liveOrder: Record<string, number> = {
  dispatched: 0,
  processing: 0,
  awaiting_approval: 1,
  queued: 2,
};

const createdTimes = new WeakMap<object, number>();
function createdAtOf(turn: ActivityTurn): number {
  let time = createdTimes.get(turn);
  if (time === undefined) {
    time = new Date(turn.createdAt).getTime();
    createdTimes.set(turn, time);
  }
  return time;
}

const newestFirst = (a: ActivityTurn, b: ActivityTurn) => createdAtOf(b) - createdAtOf(a);

/**
 * @example
 * const store = new ActivityStore({ api, filters: {} });
 * const detach = store.attach(connection);
 * await store.load();
 */
export class ActivityStore {
  private readonly api: ApiClient;
  private readonly filters: ActivityFilters;
  private readonly rows = new Map<string, ActivityTurn>();
  private finishedCursor: string | null = null;
  private snapshot: ActivitySnapshot = {
    live: [],
    finished: [],
    loading: true,
    error: null,
    hasMore: false,
  };
  private readonly listeners = new Set<() => void>();
  private refreshTimer: ReturnType<typeof setTimeout> | null = null;
  /** Rows changed since the last publish, to show at the next frame. */
  private readonly changed = new Set<string>();
  /** Whether a change since the last publish moves rows between or within the lists. */
  private reorder = false;
  private cancelFrame: (() => void) | null = null;
  private disposed = false;

  constructor(options: { api: ApiClient; filters: ActivityFilters }) {
    this.api = options.api;
    this.filters = options.filters;
  }

  getSnapshot = (): ActivitySnapshot => this.snapshot;

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  /** Reads the live turns and the first page of finished ones. */
  async load(): Promise<void> {
    // A page's effect may dispose and load the same store again (React's strict mode does).
    this.disposed = false;
    try {
      const [live, finished] = await Promise.all([this.readLive(), this.readFinished(null)]);
      if (this.disposed) return;
      this.rows.clear();
      for (const turn of [...live, ...finished.turns]) this.rows.set(turn._id, turn);
      this.finishedCursor = finished.nextCursor;
      this.publish({ loading: false, error: null });
    } catch (error) {
      this.publish({ loading: false, error: messageOf(error) });
    }
  }

  /** Reads the next page of finished turns. */
  async loadMore(): Promise<void> {
    if (!this.finishedCursor) return;
    try {
      const page = await this.readFinished(this.finishedCursor);
      for (const turn of page.turns) if (!this.rows.has(turn._id)) this.rows.set(turn._id, turn);
      this.finishedCursor = page.nextCursor;
      this.publish({});
    } catch (error) {
      this.publish({ error: messageOf(error) });
    }
  }

  /** Listens for the user's turn updates and activity notices on `connection`. */
  attach(connection: IdeConnection): () => void {
    const stopTurns = connection.onTurn((turn) => this.applyTurn(turn));
    const stopActivity = connection.subscribeActivity((activity) => this.applyActivity(activity));
    // Notices have no replay: what changed while the socket was away is read again.
    let connectedBefore = connection.state === "connected";
    const stopState = connection.onState((state) => {
      if (state !== "connected") return;
      if (connectedBefore && !this.disposed) void this.load();
      connectedBefore = true;
    });
    return () => {
      stopTurns();
      stopActivity();
      stopState();
    };
  }

  /** Drops an approval the user decided here (the turn's record follows). */
  decided(turnId: string, approvalId: string): void {
    const row = this.rows.get(turnId);
    if (!row?.activity?.approvals) return;
    this.rows.set(turnId, {
      ...row,
      activity: {
        ...row.activity,
        approvals: row.activity.approvals.filter((approval) => approval.id !== approvalId),
      },
    });
    this.publish({});
  }

  /** Stops reading in new turns (load() starts again). */
  dispose(): void {
    this.disposed = true;
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    this.refreshTimer = null;
    this.cancelFrame?.();
    this.cancelFrame = null;
  }

  /** A turn_updates record: the row takes its status, stats, changes and times. */
  applyTurn(turn: ChatTurn): void {
    const row = this.rows.get(turn._id);
    if (!row) {
      // A turn started elsewhere (another tab, a script): read the live part again.
      if (!isFinalTurnStatus(turn.status) && this.wants(turn.status)) this.scheduleRefresh();
      return;
    }
    const { response: _response, prompt: _prompt, ...fields } = turn;
    const next: ActivityTurn = { ...row, ...fields };
    // A finished turn runs no tool and waits on nobody.
    if (isFinalTurnStatus(turn.status) && next.activity) {
      next.activity = { ...next.activity, tool: null, approvals: [] };
    }
    this.rows.set(turn._id, next);
    // Only a new status moves the row (to another list or place).
    this.atNextFrame(turn._id, next.status !== row.status);
  }

  /** turn_activity notices: newer ones change the fields they carry. */
  applyActivity(notices: readonly TurnActivity[]): void {
    for (const notice of notices) {
      const row = this.rows.get(notice.turnId);
      if (!row) continue;
      const current = row.activity;
      if (current && current.seq >= notice.seq) continue;
      const { turnId: _turnId, sessionId: _sessionId, ...fields } = notice;
      const activity = { ...current, ...definedOnly(fields) } as NonNullable<
        ActivityTurn["activity"]
      >;
      const next: ActivityTurn = { ...row, activity };
      if (notice.droneName) next.droneName = notice.droneName;
      this.rows.set(notice.turnId, next);
      // Notices change no status: the rows keep their places.
      this.atNextFrame(notice.turnId, false);
    }
  }

  private wants(status: TurnStatus): boolean {
    const statuses = this.filters.status;
    return !statuses || statuses.length === 0 || statuses.includes(status);
  }

  private query(statuses: readonly TurnStatus[]): ActivityQuery | null {
    const wanted = this.filters.status?.length
      ? statuses.filter((status) => this.filters.status?.includes(status))
      : statuses;
    if (wanted.length === 0) return null;
    return {
      status: wanted,
      ...(this.filters.project ? { project: this.filters.project } : {}),
      ...(this.filters.drone ? { drone: this.filters.drone } : {}),
    };
  }

  private async readLive(): Promise<ActivityTurn[]> {
    const query = this.query(liveTurnStatuses);
    if (!query) return [];
    const turns: ActivityTurn[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < livePages; page++) {
      const answer = await this.api.listActivity({
        ...query,
        limit: 200,
        ...(cursor ? { cursor } : {}),
      });
      turns.push(...answer.turns);
      cursor = answer.nextCursor;
      if (!cursor) break;
    }
    return turns;
  }

  private readFinished(cursor: string | null) {
    const query = this.query(finalTurnStatuses);
    if (!query) return Promise.resolve({ turns: [] as ActivityTurn[], nextCursor: null });
    return this.api.listActivity({
      ...query,
      limit: finishedPage,
      ...(cursor ? { cursor } : {}),
    });
  }

  private scheduleRefresh(): void {
    this.refreshTimer ??= setTimeout(() => {
      this.refreshTimer = null;
      void this.readLive()
        .then((live) => {
          if (this.disposed) return;
          for (const turn of live) {
            const known = this.rows.get(turn._id);
            // Keep what the socket already told about a known row.
            const activity =
              known?.activity && known.activity.seq > (turn.activity?.seq ?? 0)
                ? known.activity
                : turn.activity;
            this.rows.set(turn._id, activity ? { ...turn, activity } : turn);
          }
          this.publish({});
        })
        .catch(() => undefined);
    }, refreshDelayMs);
  }

  /**
   * Shows a change at the end of this task (with the rest of its message) if nothing was shown
   * since the last frame, else with the next frame: at most one render a frame, and a lone event
   * waits for none.
   */
  private atNextFrame(turnId: string, reorder: boolean): void {
    this.changed.add(turnId);
    if (reorder) this.reorder = true;
    if (this.cancelFrame) return;
    this.holdFrame();
    queueMicrotask(() => this.flush());
  }

  /** Until the next frame, changes wait; then they show, and hold the frame after it. */
  private holdFrame(): void {
    const next = () => {
      this.cancelFrame = null;
      if (this.changed.size === 0 && !this.reorder) return;
      this.flush();
      this.holdFrame();
    };
    // A hidden tab has no frames: what it missed shows when it is seen again.
    if (typeof requestAnimationFrame === "function") {
      const frame = requestAnimationFrame(next);
      this.cancelFrame = () => cancelAnimationFrame(frame);
    } else {
      const timer = setTimeout(next, 16);
      this.cancelFrame = () => clearTimeout(timer);
    }
  }

  private flush(): void {
    if (this.reorder) this.publish({});
    else if (this.changed.size > 0) this.publishInPlace();
  }

  /** The changed rows in their places; a list none of them is in stays the same array. */
  private publishInPlace(): void {
    const changed = this.changed;
    const current = (list: ActivityTurn[]) =>
      list.some((row) => changed.has(row._id))
        ? list.map((row) => (changed.has(row._id) ? (this.rows.get(row._id) ?? row) : row))
        : list;
    this.snapshot = {
      ...this.snapshot,
      live: current(this.snapshot.live),
      finished: current(this.snapshot.finished),
    };
    changed.clear();
    for (const listener of this.listeners) listener();
  }

  private publish(state: Partial<Pick<ActivitySnapshot, "loading" | "error">>): void {
    // Everything is read from the rows again: nothing is left for the next frame.
    this.changed.clear();
    this.reorder = false;
    const live: ActivityTurn[] = [];
    const finished: ActivityTurn[] = [];
    for (const row of this.rows.values()) {
      if (!this.wants(row.status)) continue;
      (isFinalTurnStatus(row.status) ? finished : live).push(row);
    }
    live.sort(
      (a, b) => (liveOrder[a.status] ?? 0) - (liveOrder[b.status] ?? 0) || newestFirst(a, b),
    );
    finished.sort(newestFirst);
    this.snapshot = {
      ...this.snapshot,
      ...state,
      live,
      finished,
      hasMore: this.finishedCursor !== null,
    };
    for (const listener of this.listeners) listener();
  }
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(
    Object.entries(value).filter(([, field]) => field !== undefined),
  ) as Partial<T>;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
