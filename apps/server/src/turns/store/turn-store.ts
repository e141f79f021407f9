// The one way a ChatTurn changes: under the turn's lock, read it (or this process's copy, when
// nobody wrote it since), let the caller decide, store new events (idempotently), derive the
// turn's state from them, write what changed, index it, then announce what was written. Who
// hears (the relay, the browsers' push, metrics, dispatch) is wired in server.ts.
import { activeTurnStatuses, type ChatTurnDocument, type Models } from "@gadget/db";
import type { AgentEvent, TurnEvent } from "@gadget/protocol";
import { isFinalTurnStatus } from "@gadget/protocol";
import { Types } from "mongoose";
import { Announcer } from "../../announcer.ts";
import { ownedBy } from "../../owned.ts";
import type { Locks } from "../../redis/locks.ts";
import type { EventWriter } from "./event-writer.ts";
import type { SeqStore } from "./seq-store.ts";
import { pullRequestOf, rememberExchange, rememberPullRequest } from "./session-history.ts";
import type { TurnIndex } from "./turn-index.ts";
import { applyEvents, type TurnState } from "./turn-state.ts";
import { TurnWrites } from "./turn-writes.ts";

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

function stateOf(turn: ChatTurnDocument): TurnState {
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
  };
}

/**
 * The fields of `update` that differ from `turn` (stats per counter). FerretDB v1 applies an
 * update field by field in a read-modify-write of the document: measured there, a one-field
 * `$set` took about half as long as a three-field one, and a flush changes two or three fields.
 */
function changedFields(
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
function holderOf(turn: Pick<ChatTurnDocument, "status" | "drone">): string | null {
  return activeTurnStatuses.includes(turn.status) && turn.drone ? String(turn.drone) : null;
}

/** How many recently written running turns each process keeps a copy of. */
const recentLimit = 5_000;

/** A drone's hold on a turn (a used slot of the drone). */
export interface TurnHold {
  turnId: string;
  droneId: string;
}

/** One stored mutation: the turn before and after it and the events it added. */
export interface TurnWritten {
  before: ChatTurnDocument;
  turn: ChatTurnDocument;
  /** Events numbered and stored by this mutation (a drone's own events are relayed by ingest). */
  events: TurnEvent[];
  statusChanged: boolean;
}

/** What a TurnStore announces, in the order it happens to one turn. */
export type TurnStoreEvents = {
  /** A drone took the turn: announced under the turn's lock, together with the turn's write. */
  held: [hold: TurnHold];
  /** A drone no longer holds the turn: announced under the turn's lock once the write is stored. */
  released: [hold: TurnHold];
  /** A mutation was stored and indexed and the lock released. */
  written: [written: TurnWritten];
  /** The turn reached a final status (announced after its `written`). */
  finished: [turn: ChatTurnDocument];
};

export interface TurnStoreDependencies {
  models: Models;
  locks: Locks;
  seqs: SeqStore;
  turnIndex: TurnIndex;
  /** Group-commits the server's own events with the drones'. */
  eventWriter: EventWriter;
}

/** Serialised writes to turns, announcing each (`held`, `released`, `written`, `finished`). */
export class TurnStore extends Announcer<TurnStoreEvents> {
  /**
   * Running turns this process wrote last, without `messages` and `resumeState`, with the
   * version stamped in Redis when they were written: a mutation of an unchanged turn needs no
   * database read (the accumulator's flushes, lease renewals).
   */
  private readonly recent = new Map<string, { version: string; turn: ChatTurnDocument }>();
  /** ChatTurn updates, group-committed (see turn-writes.ts). */
  private readonly turnWrites: TurnWrites;
  private readonly models: Models;
  private readonly locks: Locks;
  private readonly seqs: SeqStore;
  private readonly turnIndex: TurnIndex;
  private readonly eventWriter: EventWriter;

  constructor({ models, locks, seqs, turnIndex, eventWriter }: TurnStoreDependencies) {
    super();
    this.models = models;
    this.locks = locks;
    this.seqs = seqs;
    this.turnIndex = turnIndex;
    this.eventWriter = eventWriter;
    this.turnWrites = new TurnWrites(models);
  }

  /** Reads a turn by id (callers that must see the latest hold its lock). */
  read(turnId: string): Promise<ChatTurnDocument | null> {
    return this.models.ChatTurn.findById(turnId).lean<ChatTurnDocument>().exec();
  }

  /**
   * Runs `decide` on the current turn under its lock and applies what it returns.
   * `decide` may throw a GadgetError to refuse; returning null changes nothing. The turn it gets
   * (and the outcome's) may lack `messages` and `resumeState`: read those with `read`.
   * @example await store.mutate(id, (turn) => turn.status === "queued" ? { events: [cancelledDone] } : null);
   */
  async mutate<R>(
    turnId: string,
    decide: (turn: ChatTurnDocument) => TurnMutation<R> | null | Promise<TurnMutation<R> | null>,
  ): Promise<MutationOutcome<R> | null> {
    return this.locked(turnId, async (apply) => {
      const turn = await this.current(turnId);
      if (!turn) return null;
      return apply(turn, await decide(turn));
    });
  }

  /** The turn as last written by this process if nobody changed it since, else as stored. */
  private async current(turnId: string): Promise<ChatTurnDocument | null> {
    const recent = this.recent.get(turnId);
    if (recent && (await this.seqs.version(turnId)) === recent.version) return recent.turn;
    return this.read(turnId);
  }

  /**
   * Holds the turn's lock while `work` reads what it needs and writes through `apply`; what was
   * written is indexed and announced once the lock is released.
   * @example await store.locked(id, async (apply) => apply(await store.read(id), { set: { … } }));
   */
  async locked<T>(turnId: string, work: (apply: ApplyMutation) => Promise<T>): Promise<T> {
    const written: Array<() => Promise<void>> = [];
    try {
      return await this.locks.with(`turn:${turnId}`, () =>
        work((turn, mutation) => this.apply(turn, mutation, written)),
      );
    } finally {
      for (const after of written) await after();
    }
  }

  private async apply<R>(
    turn: ChatTurnDocument,
    mutation: TurnMutation<R> | null,
    written: Array<() => Promise<void>>,
  ): Promise<MutationOutcome<R>> {
    const unchanged = { turn, events: [], result: mutation?.result, changed: false };
    if (!mutation) return unchanged;
    const fresh = mutation.events ?? [];
    const stored = mutation.storedEvents ?? [];
    if (!fresh.length && !stored.length && !mutation.set) return unchanged;
    const turnId = String(turn._id);
    const now = new Date();
    const state = { ...applyEvents(stateOf(turn), [...stored, ...fresh], now), ...mutation.set };
    const events: TurnEvent[] = [];
    if (fresh.length > 0) {
      // The holder changes with the events that change it, in the same atomic step, so a drone
      // batch racing this write is either before it or refused.
      const drone = mutation.set?.drone !== undefined ? mutation.set.drone : turn.drone;
      const holder = holderOf({ status: state.status ?? turn.status, drone }) ?? "";
      // Taking the turn from its drone (interrupted, cancelled): number after what is stored, so
      // seqs the drone took but could not store leave no hole before the server's own events.
      const takenFrom = holderOf(turn) !== null && holder === "";
      const first =
        mutation.firstSeq ??
        (await this.seqs.allocate(turnId, fresh.length, holder, {
          ...(takenFrom ? { storedUpTo: await this.seqs.storedUpTo(turn) } : {}),
        }));
      fresh.forEach((incoming, index) => {
        events.push({
          seq: first + index,
          type: incoming.type,
          data: incoming.data,
          at: incoming.at ?? now,
        } as TurnEvent);
      });
    }
    // Server events go through the group-commit writer with the drones' events.
    const insertEvents = () => this.eventWriter.write(turnId, events);
    // Events first, so a failed write never leaves a turn whose state is ahead of its log.
    if (!mutation.together) {
      await mutation.after;
      await insertEvents();
    }
    const lastSeq = Math.max(
      turn.lastSeq ?? 0,
      ...stored.map((event) => event.seq),
      ...events.map((event) => event.seq),
    );
    const update: Partial<ChatTurnDocument> = { ...state, lastSeq };
    const updated = { ...turn, ...update } as ChatTurnDocument;
    // The exchange joins the session's history before the turn is stored as completed and before
    // its slot is freed: nothing may dispatch the session's next turn without it.
    if (updated.status === "completed" && turn.status !== "completed")
      await rememberExchange({ models: this.models, locks: this.locks }, updated);
    // Likewise the pull request the turn's delivery opened: the next turn updates it.
    const pullRequest = pullRequestOf([...stored, ...fresh]);
    if (pullRequest) await rememberPullRequest(this.models, turn.session, pullRequest);
    const heldBefore = holderOf(turn);
    const heldAfter = holderOf(updated);
    // Redis indexes that change with the turn, under its lock so they never overtake each other:
    // used slots (dispatch's capacity, kept by whoever hears `held`/`released`; a slot is freed
    // only once the turn's write is stored) and the cancel mark (heartbeats).
    // Started only in the Promise.all below: a write started before an earlier await and never
    // awaited (that await failed) would reject with no one to hear it.
    const indexes: Array<() => Promise<unknown>> = [];
    if (heldAfter && heldAfter !== heldBefore) {
      indexes.push(() => this.announce("held", { turnId, droneId: heldAfter }));
    }
    if (Boolean(updated.cancelRequestedAt) !== Boolean(turn.cancelRequestedAt)) {
      indexes.push(() => this.seqs.markCancel(turnId, Boolean(updated.cancelRequestedAt)));
    }
    const changed = changedFields(turn, update);
    // Stamped before the write: a copy anywhere is stale from now on, even if the write fails.
    this.recent.delete(turnId);
    const [version] = await Promise.all([this.seqs.stamp(turnId), mutation.after]);
    await Promise.all([
      mutation.together ? insertEvents() : null,
      Object.keys(changed).length > 0 ? this.turnWrites.set(turn._id, changed) : null,
      ...indexes.map((index) => index()),
    ]);
    if (heldBefore && heldBefore !== heldAfter) {
      await this.announce("released", { turnId, droneId: heldBefore });
    }
    if (version && !isFinalTurnStatus(updated.status)) this.keep(turnId, version, updated);
    const statusChanged = updated.status !== turn.status;
    written.push(async () => {
      // Drone.activeTurns mirrors the slots in MongoDB (reconnects, revocation, the drone list).
      if (heldBefore !== heldAfter) {
        if (heldBefore) await this.mirrorSlot(heldBefore, turn._id, "$pull");
        if (heldAfter) await this.mirrorSlot(heldAfter, turn._id, "$addToSet");
      }
      await this.afterWrite(turn, updated, events, statusChanged);
    });
    return { turn: updated, events, result: mutation.result, changed: true };
  }

  /** Keeps a copy of a running turn as just written (bounded; oldest first out). */
  private keep(turnId: string, version: string, turn: ChatTurnDocument): void {
    const { messages: _messages, resumeState: _resumeState, ...slim } = turn;
    this.recent.delete(turnId);
    this.recent.set(turnId, { version, turn: slim as ChatTurnDocument });
    if (this.recent.size > recentLimit) {
      const oldest = this.recent.keys().next().value;
      if (oldest !== undefined) this.recent.delete(oldest);
    }
  }

  /** Indexes what was written, then announces it (the lock is released by now). */
  private async afterWrite(
    before: ChatTurnDocument,
    turn: ChatTurnDocument,
    events: TurnEvent[],
    statusChanged: boolean,
  ) {
    const turnId = String(turn._id);
    if (
      statusChanged ||
      String(before.leaseExpiresAt ?? "") !== String(turn.leaseExpiresAt ?? "")
    ) {
      await this.turnIndex.record(turn);
    }
    if (statusChanged && isFinalTurnStatus(turn.status)) await this.seqs.retire(turnId);
    if (statusChanged && isFinalTurnStatus(before.status)) await this.seqs.keep(turnId);
    await this.announce("written", { before, turn, events, statusChanged });
    if (statusChanged && isFinalTurnStatus(turn.status)) await this.announce("finished", turn);
  }

  /** Adds or removes a turn from Drone.activeTurns (the slots' mirror in MongoDB). */
  private async mirrorSlot(
    droneId: string,
    turnId: Types.ObjectId,
    operator: "$pull" | "$addToSet",
  ) {
    await this.locks.with(`drone:${droneId}`, () =>
      this.models.Drone.updateOne(
        { _id: new Types.ObjectId(droneId) },
        { [operator]: { activeTurns: turnId } },
      ),
    );
  }

  /** Reads a turn that belongs to `userId`, or null. */
  async findOwned(userId: string, turnId: string): Promise<ChatTurnDocument | null> {
    if (!Types.ObjectId.isValid(turnId)) return null;
    return ownedBy(await this.read(turnId), userId);
  }
}
