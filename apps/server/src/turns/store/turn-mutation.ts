// What a mutation of a turn is: the caller's decision (new events, fields to set) and its outcome,
// and the pure rules TurnStore applies it with (the turn's state before, the fields that changed).
import { activeTurnStatuses, type ChatTurnDocument } from "@gadget/db";
import type { AgentEvent, TurnEvent } from "@gadget/protocol";
import type { TurnState } from "./turn-state.ts";

/** A new event of the server's own (queued, dispatched, done…), numbered when stored. */
export type IncomingEvent = AgentEvent & { at?: Date };

export interface TurnMutation<R> {
  /** The server's own new events: numbered from the turn's seq counter and stored. */
  events?: IncomingEvent[];
  /** The seq of the first of `events` when the caller already took them (dispatch's claim). */
  firstSeq?: number;
  /**
   * Store `events` and the turn in one round instead of events first (dispatch's claim, which
   * the drone waits for). If only the turn's write lands, the lease sweeper ends the turn.
   */
  together?: boolean;
  /**
   * Dispatch's claim script already took the drone's slot and stamped the turn's new version
   * (`version`): the write stamps nothing, and its `held` says the slot is taken.
   */
  claimed?: { version: string };
  /**
   * The turn's drone went offline: its events are refused from now on (the seq counter's holder
   * is cleared) while the turn stays its own; `events` are numbered after what is stored.
   */
  detach?: boolean;
  /** The turn's drone is back (after `detach`): the counter's holder is the drone again. */
  attach?: boolean;
  /** Drone events already numbered and stored (ingestion): only applied to the turn. */
  storedEvents?: TurnEvent[];
  /** Fields written after the event-derived state (e.g. `status: "queued"` on resume). */
  set?: Partial<ChatTurnDocument>;
  /**
   * A write this one must follow, awaited just before writing (dispatch's claim of a turn whose
   * own insert is still in flight); if it fails, nothing is written and the mutation fails.
   */
  after?: Promise<unknown>;
  result?: R;
}

export interface MutationOutcome<R> {
  turn: ChatTurnDocument;
  events: TurnEvent[];
  result: R | undefined;
  changed: boolean;
}

/** Writes a mutation of `turn`, which the caller read while holding the turn's lock. */
export type ApplyMutation = <R>(
  turn: ChatTurnDocument,
  mutation: TurnMutation<R> | null,
) => Promise<MutationOutcome<R>>;

export function stateOf(turn: ChatTurnDocument): TurnState {
  return {
    status: turn.status,
    stats: { ...turn.stats },
    response: turn.response ?? null,
    error: turn.error ?? null,
    exitReason: turn.exitReason ?? null,
    changes: turn.changes ?? [],
    branch: turn.branch ?? null,
    commit: turn.commit ?? null,
    delivery: turn.delivery ?? null,
    pendingApprovals: turn.pendingApprovals ?? [],
    createdAt: turn.createdAt,
    startedAt: turn.startedAt ?? null,
    finishedAt: turn.finishedAt ?? null,
    leaseExpiresAt: turn.leaseExpiresAt ?? null,
    waiting: turn.waiting ?? null,
    quotaWait: turn.quotaWait ?? null,
  };
}

/**
 * The fields of `update` that differ from `turn` (stats per counter). FerretDB v1 applies an
 * update field by field in a read-modify-write of the document: measured there, a one-field
 * `$set` took about half as long as a three-field one, and a flush changes two or three fields.
 */
export function changedFields(
  turn: ChatTurnDocument,
  update: Partial<ChatTurnDocument>,
): Record<string, unknown> {
  const changed: Record<string, unknown> = {};
  const same = (a: unknown, b: unknown) => a === b || JSON.stringify(a) === JSON.stringify(b);
  for (const [key, value] of Object.entries(update)) {
    const before = (turn as unknown as Record<string, unknown>)[key];
    if (key === "stats" && value && before && typeof before === "object") {
      for (const [name, count] of Object.entries(value)) {
        if (!same(count, (before as Record<string, unknown>)[name]))
          changed[`stats.${name}`] = count;
      }
    } else if (!same(value, before)) {
      changed[key] = value;
    }
  }
  return changed;
}

/** The drone holding `turn`, if any. */
export function holderOf(turn: Pick<ChatTurnDocument, "status" | "drone">): string | null {
  return activeTurnStatuses.includes(turn.status) && turn.drone ? String(turn.drone) : null;
}
