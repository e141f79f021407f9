// The one way into a turn's record: a new turn and its first event (`create`), a drone's numbered
// events (`append`), and every change under the turn's lock (`mutate`: read the turn, or this
// process's copy when nobody wrote it since, let the caller decide, store new events
// idempotently, derive the turn's state from them, write what changed, index it). Each is then
// announced; who hears (the relay, the browsers' push, webhooks, metrics, dispatch) is wired in
// server.ts, and nothing here calls them.
import type { ChatTurnDocument, Models } from "@gadget/db";
import type { Logger } from "@gadget/logging";
import type { TurnEvent, TurnEventBatch } from "@gadget/protocol";
import { isFinalTurnStatus } from "@gadget/protocol";
import { Types } from "mongoose";
import { Announcer } from "../../announcer.ts";
import { ownedBy } from "../../owned.ts";
import type { Locks } from "../../redis/locks.ts";
import type { StorageHealth } from "../../storage/health.ts";
import { type DroneAppend, DroneBatches, type StoredEvents } from "./drone-batches.ts";
import type { EventWriter } from "./event-writer.ts";
import { RecentTurns } from "./recent-turns.ts";
import type { SeqStore } from "./seq-store.ts";
import { pullRequestOf, rememberExchange, rememberPullRequest } from "./session-history.ts";
import { TurnAccumulator } from "./turn-accumulator.ts";
import type { TurnIndex } from "./turn-index.ts";
import {
  type ApplyMutation,
  changedFields,
  holderOf,
  type MutationOutcome,
  stateOf,
  type TurnMutation,
} from "./turn-mutation.ts";
import { applyEvents } from "./turn-state.ts";
import { TurnWrites } from "./turn-writes.ts";

export type { DroneAppend, StoredEvents } from "./drone-batches.ts";
export type { IncomingEvent, MutationOutcome, TurnMutation } from "./turn-mutation.ts";

/** A drone's hold on a turn (a used slot of the drone). */
export interface TurnHold {
  turnId: string;
  droneId: string;
  /** The slot is taken already (dispatch's claim script took it). */
  slotTaken?: boolean;
}

/** One stored change of a turn: the turn before (null when new) and after, and its new events. */
export interface TurnWritten {
  before: ChatTurnDocument | null;
  turn: ChatTurnDocument;
  /** The server's own events stored with it (a drone's are announced by `appended`/`live`). */
  events: TurnEvent[];
  statusChanged: boolean;
}

/** What a TurnStore announces, in the order it happens to one turn. */
export type TurnStoreEvents = {
  /** A drone took the turn: announced under the turn's lock, together with the turn's write. */
  held: [hold: TurnHold];
  /** A drone no longer holds the turn: announced under the turn's lock once the write is stored. */
  released: [hold: TurnHold];
  /** A drone's new events are stored, before they are applied to the turn. */
  appended: [stored: StoredEvents];
  /**
   * Stored events may be shown, in seq order per turn: the server's own once their write is
   * stored, a drone's at once, or once applied when a browser must see the turn show them
   * (an approval it can decide, a `done` after which it reads a finished turn).
   */
  live: [stored: StoredEvents];
  /** A new turn or a mutation was stored and indexed and the lock released. */
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
  /** Outages of the database and Redis, which a drone is answered `unavailable` for. */
  health: StorageHealth;
  logger: Logger;
  /** How often a running turn's waiting drone events are applied (config `turnFlushIntervalMs`). */
  flushIntervalMs: number;
}

/**
 * Serialised writes to turns, announcing each (`held`, `released`, `appended`, `live`,
 * `written`, `finished`).
 */
export class TurnStore extends Announcer<TurnStoreEvents> {
  /** Copies of the running turns this process wrote last (see recent-turns.ts). */
  private readonly recent = new RecentTurns();
  /** ChatTurn updates, group-committed (see turn-writes.ts). */
  private readonly turnWrites: TurnWrites;
  /** Drone events waiting to be applied to their turns together. */
  private readonly accumulator: TurnAccumulator;
  private readonly droneBatches: DroneBatches;
  private readonly models: Models;
  private readonly locks: Locks;
  /** What the session's writes need (session-writes.ts). */
  private readonly sessions: Pick<TurnStoreDependencies, "models" | "locks">;
  private readonly seqs: SeqStore;
  private readonly turnIndex: TurnIndex;
  private readonly eventWriter: EventWriter;

  constructor(dependencies: TurnStoreDependencies) {
    super();
    const { models, locks, seqs, turnIndex, eventWriter, health } = dependencies;
    this.models = models;
    this.locks = locks;
    this.sessions = { models, locks };
    this.seqs = seqs;
    this.turnIndex = turnIndex;
    this.eventWriter = eventWriter;
    this.turnWrites = new TurnWrites(models);
    this.accumulator = new TurnAccumulator({
      apply: async (turnId, events) =>
        (await this.mutate(turnId, () => ({ storedEvents: events })))?.turn ?? null,
      seqs,
      health,
      logger: dependencies.logger,
      flushIntervalMs: dependencies.flushIntervalMs,
    });
    this.droneBatches = new DroneBatches({
      models,
      seqs,
      eventWriter,
      accumulator: this.accumulator,
      health,
      appended: (stored) => this.announce("appended", stored),
      live: (stored) => this.announce("live", stored),
    });
  }

  /** Reads a turn by id (callers that must see the latest hold its lock). */
  read(turnId: string): Promise<ChatTurnDocument | null> {
    return this.models.ChatTurn.findById(turnId).lean<ChatTurnDocument>().exec();
  }

  /** Reads a turn that belongs to `userId`, or null. */
  async findOwned(userId: string, turnId: string): Promise<ChatTurnDocument | null> {
    if (!Types.ObjectId.isValid(turnId)) return null;
    return ownedBy(await this.read(turnId), userId);
  }

  /**
   * Stores a new turn (validated, known to nobody yet, so without a lock) with its first event,
   * starts its seq counter and index, and announces it. `whileStoring` runs once the counter is
   * started, with the turn's document and event still in flight: dispatch claims a drone
   * meanwhile and stores its claim once `stored` resolves.
   * @example await store.create(turn, queuedEvent, (stored) => dispatcher.dispatchNow(…, { stored }));
   */
  async create(
    turn: ChatTurnDocument,
    first: TurnEvent,
    /** Called once the writes are sent: `stored` (the inserts) and `counted` (the seq counter). */
    whileStoring?: (stored: Promise<void>, counted: Promise<void>) => unknown,
  ): Promise<void> {
    const turnId = String(turn._id);
    const sessionId = String(turn.session);
    const userId = String(turn.user);
    // The driver's inserts, without mongoose's asynchronous save machinery (`turn` is validated).
    const stored = Promise.all([
      this.models.ChatTurn.collection.insertOne({ ...turn }),
      this.models.TurnEvent.collection.insertOne({ ...first, turn: turn._id }),
    ]).then(() => undefined);
    // Awaited below; this keeps a failed insert from counting as unhandled meanwhile.
    stored.catch(() => undefined);
    const counted = this.seqs.init(turnId, { last: first.seq, holder: "", sessionId, userId });
    counted.catch(() => undefined);
    // A dispatch may take the turn's lock meanwhile; it claims a seq only once `counted` is.
    await whileStoring?.(stored, counted);
    await counted;
    await stored.catch(async (error: unknown) => {
      // Not stored: its place among the user's queued turns is free again.
      await this.turnIndex.record({ ...turn, status: "failed" }).catch(() => undefined);
      throw error;
    });
    // Announced before a dispatch's claim can be stored (that waits for a database write), so no
    // browser hears of the turn `queued` after `dispatched`.
    await this.announce("written", { before: null, turn, events: [first], statusChanged: true });
    await Promise.all([
      this.turnIndex.record(turn),
      this.announce("live", { turnId, sessionId, userId, events: [first] }),
    ]);
  }

  /**
   * Appends a drone's batch of consecutive events to its turn (see drone-batches.ts): answers
   * once they are stored and, for an approval or `done`, applied; `not_held` and `gap` are the
   * drone's to hear.
   * @example const outcome = await store.append(droneId, batch.turnId, batch.events);
   */
  append(droneId: string, turnId: string, events: TurnEventBatch["events"]): Promise<DroneAppend> {
    return this.droneBatches.append(droneId, turnId, events);
  }

  /** Applies every drone event waiting here (shutdown). */
  async flush(): Promise<void> {
    await this.accumulator.flushAll();
  }

  /** Resolves once every event taken is stored and applied (shutdown, after the sockets close). */
  async drain(): Promise<void> {
    await this.eventWriter.drain();
    await this.accumulator.flushAll();
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
    const copy = this.recent.has(turnId)
      ? this.recent.at(turnId, await this.seqs.version(turnId))
      : null;
    return copy ?? this.read(turnId);
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
      // An offline drone's turn stays detached from it until it is back (`attach`).
      const detached = mutation.detach || (turn.lostSeq != null && !mutation.attach);
      const holder = detached
        ? ""
        : (holderOf({ status: state.status ?? turn.status, drone }) ?? "");
      // Taking the turn from its drone (interrupted, cancelled, offline): number after what is
      // stored, so seqs the drone took but could not store leave no hole before the server's own.
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
    // Detached: where the drone lost the turn is stored with the detachment itself, so a drone
    // that comes back always finds it (a second write could be lost with a stopping server).
    if (mutation.detach && events[0]) Object.assign(state, { lostSeq: events[0].seq });
    // Server events go through the group-commit writer with the drones' events.
    const insertEvents = () => this.eventWriter.write(turnId, events, String(turn.user));
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
      await rememberExchange(this.sessions, updated);
    // Likewise the pull request the turn's delivery opened: the next turn updates it.
    const pullRequest = pullRequestOf([...stored, ...fresh]);
    if (pullRequest) await rememberPullRequest(this.sessions, turn.session, pullRequest);
    const heldBefore = holderOf(turn);
    const heldAfter = holderOf(updated);
    // Redis indexes that change with the turn, under its lock so they never overtake each other:
    // used slots (dispatch's capacity, kept by whoever hears `held`/`released`; a slot is freed
    // only once the turn's write is stored) and the cancel mark (heartbeats).
    // Started only in the Promise.all below: a write started before an earlier await and never
    // awaited (that await failed) would reject with no one to hear it.
    const indexes: Array<() => Promise<unknown>> = [];
    if (heldAfter && heldAfter !== heldBefore) {
      const slotTaken = mutation.claimed !== undefined;
      indexes.push(() => this.announce("held", { turnId, droneId: heldAfter, slotTaken }));
    }
    if (Boolean(updated.cancelRequestedAt) !== Boolean(turn.cancelRequestedAt)) {
      indexes.push(() => this.seqs.markCancel(turnId, Boolean(updated.cancelRequestedAt)));
    }
    const changed = changedFields(turn, update);
    // Stamped before the write: a copy anywhere is stale from now on, even if the write fails.
    this.recent.forget(turnId);
    const [version] = await Promise.all([
      mutation.claimed?.version ?? this.seqs.stamp(turnId),
      mutation.after,
    ]);
    await Promise.all([
      mutation.together ? insertEvents() : null,
      Object.keys(changed).length > 0 ? this.turnWrites.set(turn._id, changed) : null,
      ...indexes.map((index) => index()),
    ]);
    if (heldBefore && heldBefore !== heldAfter) {
      await this.announce("released", { turnId, droneId: heldBefore });
    }
    if (version && !isFinalTurnStatus(updated.status)) this.recent.keep(turnId, version, updated);
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
    if (events.length > 0) {
      await this.announce("live", {
        turnId,
        sessionId: String(turn.session),
        userId: String(turn.user),
        events,
      });
    }
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
}
