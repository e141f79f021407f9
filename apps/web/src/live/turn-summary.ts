// How many of the user's turns run, wait on them or wait for a drone, kept live for the top bar,
// the tab title and the favicon; and each turn's move to a status worth telling (finished,
// failed, needs approval), for browser notifications.
import type { ChatTurn, TurnStatus, TurnSummary } from "@gadget/protocol";
import type { ApiClient } from "../api/client.ts";
import type { IdeConnection } from "./connection.ts";

/** How long status changes gather before the counts are read again. */
const refreshDelayMs = 150;

/** A status worth telling the user about when they are not looking. */
export type TurnNews = "completed" | "failed" | "cancelled" | "interrupted" | "awaiting_approval";

const newsworthy = new Set<TurnStatus>([
  "completed",
  "failed",
  "cancelled",
  "interrupted",
  "awaiting_approval",
]);

export const emptySummary: TurnSummary = { running: 0, awaitingApproval: 0, queued: 0 };

/**
 * @example
 * const summary = new TurnSummaryStore({ api });
 * const detach = summary.attach(connection);
 * summary.onNews((turn, news) => notify(turn, news));
 */
export class TurnSummaryStore {
  private readonly api: ApiClient;
  private summary: TurnSummary = emptySummary;
  private readonly statuses = new Map<string, TurnStatus>();
  private readonly listeners = new Set<() => void>();
  private readonly newsListeners = new Set<(turn: ChatTurn, news: TurnNews) => void>();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private generation = 0;

  constructor(options: { api: ApiClient }) {
    this.api = options.api;
  }

  getSnapshot = (): TurnSummary => this.summary;

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  /** Calls `listener` when a turn of the user finishes, fails or starts waiting for approval. */
  onNews(listener: (turn: ChatTurn, news: TurnNews) => void): () => void {
    this.newsListeners.add(listener);
    return () => this.newsListeners.delete(listener);
  }

  /** Reads the counts now. */
  async refresh(): Promise<void> {
    const generation = ++this.generation;
    try {
      const summary = await this.api.turnSummary();
      // A slower, older answer must not overwrite a newer one.
      if (generation !== this.generation) return;
      this.set(summary);
    } catch {
      // The counts stay as they were; the next change reads them again.
    }
  }

  /** Follows the user's turn updates on `connection` (and reads the counts after a reconnect). */
  attach(connection: IdeConnection): () => void {
    const stopTurns = connection.onTurn((turn) => this.applyTurn(turn));
    const stopState = connection.onState((state) => {
      if (state === "connected") this.schedule();
    });
    void this.refresh();
    return () => {
      stopTurns();
      stopState();
      if (this.timer) clearTimeout(this.timer);
      this.timer = null;
    };
  }

  /** A turn_updates record: a changed status reads the counts again (soon, once for many). */
  applyTurn(turn: ChatTurn): void {
    const before = this.statuses.get(turn._id);
    if (before === turn.status) return;
    this.statuses.set(turn._id, turn.status);
    this.schedule();
    if (newsworthy.has(turn.status)) {
      for (const listener of this.newsListeners) listener(turn, turn.status as TurnNews);
    }
  }

  private schedule(): void {
    this.timer ??= setTimeout(() => {
      this.timer = null;
      void this.refresh();
    }, refreshDelayMs);
  }

  private set(summary: TurnSummary): void {
    const current = this.summary;
    if (
      current.running === summary.running &&
      current.awaitingApproval === summary.awaitingApproval &&
      current.queued === summary.queued
    ) {
      return;
    }
    this.summary = summary;
    for (const listener of this.listeners) listener();
  }
}

/** The tab title with `(N) ` in front while N turns await approval. */
export function titleWithCount(title: string, awaitingApproval: number): string {
  const bare = title.replace(/^\(\d+\) /, "");
  return awaitingApproval > 0 ? `(${awaitingApproval}) ${bare}` : bare;
}

/** The favicon with a green dot in its corner (while a turn runs). */
export function faviconWithDot(svg: string): string {
  const dot = '<circle cx="25" cy="7" r="6.5" fill="#2da44e" stroke="#ffffff" stroke-width="1.5"/>';
  return `data:image/svg+xml,${encodeURIComponent(svg.replace("</svg>", `${dot}</svg>`))}`;
}

/** "2 running · 1 needs you · 3 queued", or null when nothing is live. */
export function summaryLabel(summary: TurnSummary): string | null {
  const parts: string[] = [];
  if (summary.running > 0) parts.push(`${summary.running} running`);
  if (summary.awaitingApproval > 0) parts.push(`${summary.awaitingApproval} needs you`);
  if (summary.queued > 0) parts.push(`${summary.queued} queued`);
  return parts.length > 0 ? parts.join(" · ") : null;
}
