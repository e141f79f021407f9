// What users and drones do to turns: create, cancel, resume, approve, and what the server does
// when a drone loses a turn (interrupt). Every write goes through TurnStore.mutate.

import { activeTurnStatuses, type ChatTurnDocument, type Models } from "@gadget/db";
import {
  type Ack,
  type ApprovalDecisionBody,
  type CreateTurnBody,
  isFinalTurnStatus,
  type SessionBusyWaiting,
  type TurnEvent,
  UserError,
} from "@gadget/protocol";
import { Types } from "mongoose";
import type { ResolvedConfig } from "../config.ts";
import type { Dispatcher } from "../dispatch/dispatcher.ts";
import { ownedBy } from "../owned.ts";
import { quotaExceeded } from "../quotas.ts";
import type { Locks } from "../redis/locks.ts";
import { cancelOnDrone, type DronesNamespace, droneRoom } from "../sockets/rooms.ts";
import { requeue } from "./auto-resume.ts";
import type { SeqStore } from "./store/seq-store.ts";
import { checkTurnImages, imageRefs, storeTurnImages } from "./store/turn-images.ts";
import type { TurnIndex } from "./store/turn-index.ts";
import type { TurnStore } from "./store/turn-store.ts";
import { decideApproval } from "./turn-approvals.ts";
import { TurnMessages, type TurnMessagesDependencies } from "./turn-messages.ts";

const notFound = (what: string) => new UserError("not_found", `${what} not found`);

function objectId(id: string, what: string): Types.ObjectId {
  if (!Types.ObjectId.isValid(id)) throw notFound(what);
  return new Types.ObjectId(id);
}

/** Whether a drone currently holds `turn`. */
export function isHeldBy(turn: ChatTurnDocument, droneId: string): boolean {
  return String(turn.drone) === droneId && activeTurnStatuses.includes(turn.status);
}

export interface TurnServiceDependencies {
  config: Pick<ResolvedConfig, "quotas" | "droneRequestTimeoutMs">;
  /** For the users' messages to turns (turn-messages.ts). */
  steering: Pick<TurnMessagesDependencies, "locks" | "logger">;
  models: Models;
  /** The sessions' locks (session-writes.ts). */
  locks: Locks;
  store: TurnStore;
  dispatcher: Dispatcher;
  seqs: SeqStore;
  turnIndex: TurnIndex;
  /** The drones' namespace. */
  drones: DronesNamespace;
}

/** A new turn, and its place behind the session's unfinished turns (0: none ahead). */
export interface CreatedTurn {
  turn: ChatTurnDocument;
  position: number;
}

export class TurnService {
  /** Users' messages to unfinished turns (steering). */
  readonly messages: TurnMessages;

  constructor(private readonly dependencies: TurnServiceDependencies) {
    const { config, models, store, drones, steering } = dependencies;
    this.messages = new TurnMessages({
      config,
      models,
      store,
      drones,
      ...steering,
      // Posted by the turn's user, with the turn's provider, behind the session's other turns.
      queueAsTurn: async (turn, text) => {
        const created = await this.create(String(turn.user), String(turn.session), {
          prompt: text,
          providerId: String(turn.provider),
        });
        return String(created.turn._id);
      },
    });
  }

  /**
   * Stores a new turn with its `queued` event (TurnStore.create) and queues it for dispatch, in
   * about three rounds: the caller's token (when `user` is still being checked), session,
   * provider (and drone) reads; the turn, event and counter writes (and dispatch's own reads);
   * the index, live relay and queue.
   * What was read is handed to this process's dispatcher, so the turn usually reaches a drone
   * without another database read.
   */
  async create(
    user: string | Promise<string>,
    sessionId: string,
    body: CreateTurnBody,
  ): Promise<CreatedTurn> {
    const { store, dispatcher } = this.dependencies;
    let keys: { session: Types.ObjectId; provider: Types.ObjectId; drone: Types.ObjectId | null };
    try {
      keys = {
        session: objectId(sessionId, "Session"),
        provider: objectId(body.providerId, "Provider"),
        drone: body.droneId ? objectId(body.droneId, "Drone") : null,
      };
    } catch (error) {
      await user; // An unauthenticated caller hears 401 rather than what it asked for.
      throw error;
    }
    // Its id is chosen first: the session's queue is locked and read while the caller's token,
    // the session and the provider are; it is written only once those checks pass.
    const turnObjectId = new Types.ObjectId();
    const turnId = String(turnObjectId);
    const checking = this.check(user, keys, body, turnObjectId);
    const joining = dispatcher.queues.join(
      sessionId,
      turnId,
      checking.then(() => true),
    );
    // Awaited once the checks pass; this keeps its failure from counting as unhandled before.
    joining.catch(() => undefined);
    const { userId, session, provider, created, now } = await checking;
    // Its place in the session's queue: with unfinished turns ahead it waits on the server and
    // is dispatched when they have finished (the finished turn's process starts it).
    // Its place is stored while the turn is: a dispatch's claim waits for both.
    const { position, written } = await joining;
    const queued = {
      seq: 1,
      type: "queued",
      data: {
        message:
          position > 0
            ? `Waiting for the session's earlier turns (position ${position})`
            : "Waiting for a drone",
      },
      at: now,
    } as TurnEvent;
    const turn = created.toObject() as ChatTurnDocument;
    const refs = {
      user: userId,
      session: String(turn.session),
      project: String(turn.project),
      provider: String(turn.provider),
    };
    // What dispatch needs beyond this (project, drones) is read while the turn is stored, and
    // the drone chosen while the inserts are in flight; its claim is stored after them.
    if (position > 0) {
      await Promise.all([store.create(turn, queued), written]);
      return { turn, position };
    }
    const prepared = dispatcher.prepare(turn, session, provider);
    let started = false;
    await store.create(turn, queued, (stored, counted) => {
      const both = Promise.all([stored, written]).then(() => undefined);
      // Started now: the turn's lock is taken while the inserts and `prepare`'s reads are out.
      started = dispatcher.dispatchNow(
        turnId,
        refs,
        // Without one, the attempt reads for itself once the turn and its counter are stored.
        prepared.then((handOff) =>
          handOff
            ? { ...handOff, stored: both, counted }
            : Promise.all([both, counted]).then(() => null),
        ),
      );
    });
    await written;
    // A job only when this process is not dispatching it (a job beside the dispatch found the
    // turn taken, and cost five Redis commands and a worker's wake-up on the dispatch's path).
    if (!started) await dispatcher.enqueue(turnId, refs);
    return { turn, position };
  }

  /**
   * What creating a turn checks before anything is stored: the caller owns the session, the
   * provider (and the drone asked for), and has a place left among its queued turns. Answers the
   * turn to store, validated.
   */
  private async check(
    user: string | Promise<string>,
    keys: { session: Types.ObjectId; provider: Types.ObjectId; drone: Types.ObjectId | null },
    body: CreateTurnBody,
    turnObjectId: Types.ObjectId,
  ) {
    const { models, turnIndex } = this.dependencies;
    // Read by id before the owner is known; nothing is used until ownedBy checks it.
    const [userId, foundSession, foundProvider, foundDrone] = await Promise.all([
      user,
      models.ChatSession.findById(keys.session).lean(),
      models.Provider.findById(keys.provider).lean(),
      keys.drone ? models.Drone.findById(keys.drone).lean() : null,
    ]);
    const session = ownedBy(foundSession, userId);
    if (!session) throw notFound("Session");
    const provider = ownedBy(foundProvider, userId);
    if (!provider) throw notFound("Provider");
    let requestedDrone: Types.ObjectId | null = null;
    if (keys.drone) {
      const drone = ownedBy(foundDrone, userId);
      if (!drone || drone.revokedAt) throw notFound("Drone");
      requestedDrone = drone._id;
    }
    // Checked before anything is stored: 400/413/415 for the images, 422 for the model.
    const images = checkTurnImages(provider, body.images);
    const imagesOf = imageRefs(images);
    const now = new Date();
    const owner = new Types.ObjectId(userId);
    // A new turn is known to nobody yet: its document, `queued` event and counter need no lock.
    const created = new models.ChatTurn({
      _id: turnObjectId,
      user: owner,
      session: session._id,
      project: session.project,
      provider: provider._id,
      requestedDrone,
      llm: provider.modelId,
      mode: session.mode,
      prompt: body.prompt,
      ...(imagesOf.length > 0 ? { images: imagesOf } : {}),
      status: "queued",
      limits: body.limits ?? {},
      requires: body.requires ?? [],
      lastSeq: 1,
      createdAt: now,
      queuedAt: now,
    });
    const { queuedTurns } = this.dependencies.config.quotas;
    if (!(await turnIndex.reserveQueuedPlace(userId, String(turnObjectId), now, queuedTurns))) {
      throw quotaExceeded("queuedTurns", queuedTurns);
    }
    await created.validate();
    await storeTurnImages(models, { _id: created._id, user: owner }, imagesOf, images);
    return { userId, session, provider, created, now };
  }

  /**
   * A turn finished: the messages it did not take join its session's queue, then the session's
   * next turn may start, and the user's other queued turns may take its drone's slot. Never
   * throws (what fails is logged).
   */
  async finished(turn: ChatTurnDocument): Promise<void> {
    const { dispatcher, steering } = this.dependencies;
    await this.messages.finished(turn).catch((error: unknown) => {
      steering.logger.error({ err: error, turnId: String(turn._id) }, "could not queue messages");
    });
    await dispatcher.turnFinished(turn).catch((error: unknown) => {
      steering.logger.error({ err: error }, "could not start the session's next turn");
    });
    // A drone slot was freed (or a queued turn ended): start the user's next queued turn.
    await dispatcher.kickUser(String(turn.user)).catch((error: unknown) => {
      steering.logger.error({ err: error }, "could not re-enqueue queued turns");
    });
  }

  /**
   * Cancels a turn. A queued turn, or one whose drone is not connected or does not answer,
   * is cancelled at once; otherwise the drone is told and ends the turn itself.
   */
  async cancel(userId: string, turnId: string): Promise<ChatTurnDocument> {
    const { store, config } = this.dependencies;
    const turn = await store.findOwned(userId, turnId);
    if (!turn) throw notFound("Turn");
    if (isFinalTurnStatus(turn.status)) return turn;
    if (turn.status !== "queued" && turn.drone) {
      await store.mutate(turnId, (current) =>
        isFinalTurnStatus(current.status) ? null : { set: { cancelRequestedAt: new Date() } },
      );
      const answers = await this.dependencies.drones
        .to(droneRoom(String(turn.drone)))
        .timeout(config.droneRequestTimeoutMs)
        .emitWithAck("turn_cancel", { turnId })
        .catch(() => [] as Ack[]);
      if (answers[0]?.ok) return (await store.findOwned(userId, turnId)) ?? turn;
    }
    const outcome = await this.finishNow(turnId, "cancelled", "Cancelled by the user");
    return outcome ?? turn;
  }

  /**
   * Whether the drone holding `turn` began it: it is past `dispatched`, or events beyond the ones
   * its document knows were taken (the drone's first events move it to `processing` only on the
   * accumulator's next flush, and maybe on another server).
   */
  async hasStarted(turn: ChatTurnDocument): Promise<boolean> {
    if (turn.status !== "dispatched") return true;
    const last = await this.dependencies.seqs.last(String(turn._id));
    return last !== null && last > (turn.lastSeq ?? 0);
  }

  /** Ends a turn that no drone will finish: appends `done` with `reason`, unless it already ended. */
  async finishNow(
    turnId: string,
    reason: "cancelled" | "interrupted",
    message: string,
    onlyIf?: (turn: ChatTurnDocument) => boolean | Promise<boolean>,
  ): Promise<ChatTurnDocument | null> {
    const { store, drones, config } = this.dependencies;
    return store.locked(turnId, async (apply) => {
      const turn = await store.read(turnId);
      if (!turn || isFinalTurnStatus(turn.status)) return null;
      if (onlyIf && !(await onlyIf(turn))) return null;
      const outcome = await apply(turn, {
        events: [
          { type: "status", data: { message } },
          // An interrupted turn always says why, in its `error` too (the user did not stop it).
          ...(reason === "interrupted"
            ? [{ type: "error" as const, data: { code: "interrupted", message } }]
            : []),
          { type: "done", data: { reason, passes: turn.stats.passes, totalCost: turn.stats.cost } },
        ],
        set: {
          waiting: null,
          lostSeq: null,
          ...(reason === "cancelled"
            ? { cancelRequestedAt: turn.cancelRequestedAt ?? new Date() }
            : {}),
        },
      });
      if (outcome.turn.drone && reason === "interrupted") {
        // If the drone is alive after all, it must stop: the turn is no longer its own. Told
        // under the turn's lock, so before the turn can be given back to it (a drone that comes
        // back at once is told to drop the run ahead of the new work order, never after it).
        cancelOnDrone(drones, String(outcome.turn.drone), turnId, config.droneRequestTimeoutMs);
      }
      return outcome.turn;
    });
  }

  /** Re-queues an interrupted or failed turn; the work order carries its stored messages. */
  async resume(userId: string, turnId: string): Promise<ChatTurnDocument> {
    const { store, dispatcher } = this.dependencies;
    const owned = await store.findOwned(userId, turnId);
    if (!owned) throw notFound("Turn");
    const outcome = await store.mutate(turnId, (turn) => {
      if (turn.status !== "interrupted" && turn.status !== "failed") {
        throw new UserError(
          "conflict",
          `Only interrupted or failed turns can be resumed; this one is ${turn.status}`,
        );
      }
      return requeue("Resumed; waiting for a drone");
    });
    // It left its session's queue when it ended: it joins again, behind any turn posted since.
    const { position, written } = await dispatcher.queues.join(String(owned.session), turnId);
    await written;
    if (position === 0) await dispatcher.enqueue(turnId);
    return outcome?.turn ?? owned;
  }

  /**
   * Where each queued turn of a session waits behind its earlier turns (by turn id); the first
   * unfinished turn of the session is in none.
   */
  async sessionWaits(sessionId: string): Promise<Map<string, SessionBusyWaiting>> {
    const positions = await this.dependencies.dispatcher.queues.positions(sessionId);
    const waits = new Map<string, SessionBusyWaiting>();
    for (const [turnId, position] of positions) {
      if (position > 0) waits.set(turnId, { reason: "session_busy", position });
    }
    return waits;
  }

  /** Changes a queued turn's prompt; `conflict` once a drone has it (or it ended). */
  async edit(userId: string, turnId: string, prompt: string): Promise<ChatTurnDocument> {
    const { store } = this.dependencies;
    if (!(await store.findOwned(userId, turnId))) throw notFound("Turn");
    const outcome = await store.mutate(turnId, (turn) => {
      if (turn.status !== "queued") {
        throw new UserError(
          "conflict",
          `Only a queued turn's prompt can be edited; this one is ${turn.status}`,
          { details: { reason: "turn_started", status: turn.status } },
        );
      }
      // The event moves the turn on, so a dispatch that read it before sends the new prompt.
      return { events: [{ type: "status", data: { message: "Prompt edited" } }], set: { prompt } };
    });
    if (!outcome) throw notFound("Turn");
    return outcome.turn;
  }

  /** Relays an approval decision to the drone holding the turn. */
  async decide(userId: string, turnId: string, approvalId: string, body: ApprovalDecisionBody) {
    await decideApproval(this.dependencies, { userId, turnId, approvalId }, body);
  }
}
