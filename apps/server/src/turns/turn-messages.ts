// Steering: users' messages to an unfinished turn. Each is stored (TurnMessage) and named on its
// turn (`steering`, under the turn's lock, so a message is either refused for a finished turn or
// seen by whatever finishes it), sent to the drone holding the turn (again after a reconnect, or
// in the work order of a turn not dispatched yet), and `delivered` once the turn's
// `user_message` event is stored. One the turn ended without taking becomes the session's next
// queued turn.
import {
  activeTurnStatuses,
  type ChatTurnDocument,
  type Models,
  type TurnMessageDocument,
} from "@gadget/db";
import type { Logger } from "@gadget/logging";
import {
  type AgentEvent,
  isFinalTurnStatus,
  type PostTurnMessageBody,
  type SteeringMessage,
  UserError,
} from "@gadget/protocol";
import { Types } from "mongoose";
import type { ResolvedConfig } from "../config.ts";
import type { Locks } from "../redis/locks.ts";
import { type DronesNamespace, droneRoom } from "../sockets/rooms.ts";
import type { TurnStore } from "./store/turn-store.ts";

export interface TurnMessagesDependencies {
  config: Pick<ResolvedConfig, "droneRequestTimeoutMs">;
  models: Models;
  store: TurnStore;
  locks: Locks;
  drones: DronesNamespace;
  logger: Logger;
  /** Posts a message the turn ended without as the session's next turn; answers its id. */
  queueAsTurn: (turn: ChatTurnDocument, text: string) => Promise<string>;
}

/** A message as the API shows it. */
export function toSteeringMessage(message: TurnMessageDocument): SteeringMessage {
  return {
    _id: String(message._id),
    text: message.text,
    interrupt: message.interrupt,
    status: message.status,
    ...(message.queuedTurn ? { turn: String(message.queuedTurn) } : {}),
    createdAt: message.createdAt,
  };
}

export class TurnMessages {
  constructor(private readonly dependencies: TurnMessagesDependencies) {}

  /** Stores a message to the user's turn and sends it on; `conflict` for a finished turn. */
  async post(
    userId: string,
    turnId: string,
    body: PostTurnMessageBody,
  ): Promise<TurnMessageDocument> {
    const { models, store } = this.dependencies;
    const owned = await store.findOwned(userId, turnId);
    if (!owned) throw new UserError("not_found", "Turn not found");
    if (isFinalTurnStatus(owned.status)) throw finished(owned);
    const message: TurnMessageDocument = {
      _id: new Types.ObjectId(),
      turn: owned._id,
      session: owned.session,
      user: owned.user,
      text: body.text,
      interrupt: body.interrupt ?? false,
      status: "pending",
      queuedTurn: null,
      createdAt: new Date(),
      deliveredAt: null,
    };
    // The message and its name on the turn are stored in one round; a turn found finished
    // meanwhile takes neither (the stray message is deleted again).
    const inserted = models.TurnMessage.collection.insertOne({ ...message });
    inserted.catch(() => undefined);
    const named = store.mutate(turnId, (turn) => {
      if (isFinalTurnStatus(turn.status)) throw finished(turn);
      const steering = [...(turn.steering ?? []), message._id];
      // A queued turn's work order carries it: the event moves the turn on, so a dispatch that
      // read the turn before (its creator's hand-off) reads it again. (A drone's turn gets no
      // server event: the drone numbers its events itself.)
      return turn.status === "queued"
        ? {
            events: [{ type: "status", data: { message: "A message is waiting for the turn" } }],
            set: { steering },
          }
        : { set: { steering } };
    });
    const [stored, outcome] = await Promise.allSettled([inserted, named]);
    if (outcome.status === "rejected") {
      if (stored.status === "fulfilled") {
        await models.TurnMessage.deleteOne({ _id: message._id }).catch(() => undefined);
      }
      throw outcome.reason;
    }
    if (stored.status === "rejected") throw stored.reason;
    const turn = outcome.value?.turn;
    if (turn?.drone && activeTurnStatuses.includes(turn.status)) {
      this.send(String(turn.drone), turnId, [message]);
    }
    return message;
  }

  /** The turn's messages, oldest first. */
  async list(turn: ChatTurnDocument): Promise<TurnMessageDocument[]> {
    const ids = turn.steering ?? [];
    if (ids.length === 0) return [];
    const found = await this.dependencies.models.TurnMessage.find({ _id: { $in: ids } }).lean();
    const byId = new Map(found.map((message) => [String(message._id), message]));
    return ids.flatMap((id) => byId.get(String(id)) ?? []);
  }

  /** The turn's messages the drone has not taken yet, oldest first (for a work order). */
  async pending(turn: ChatTurnDocument): Promise<TurnMessageDocument[]> {
    return (await this.list(turn)).filter((message) => message.status === "pending");
  }

  /** Sends the pending messages of the turns a drone (re)connected with. */
  async resend(droneId: string, turnIds: readonly string[]): Promise<void> {
    for (const turnId of turnIds) {
      const turn = await this.dependencies.store.read(turnId);
      if (!turn?.steering?.length || String(turn.drone) !== droneId) continue;
      const pending = await this.pending(turn);
      if (pending.length > 0) this.send(droneId, turnId, pending);
    }
  }

  /** Marks the messages a drone's stored `user_message` events took as delivered. */
  async taken(events: readonly AgentEvent[]): Promise<void> {
    for (const event of events) {
      if (event.type !== "user_message" || !Types.ObjectId.isValid(event.data.messageId)) continue;
      await this.dependencies.models.TurnMessage.updateOne(
        { _id: new Types.ObjectId(event.data.messageId) },
        { $set: { status: "delivered", deliveredAt: new Date() } },
      );
    }
  }

  /**
   * A turn finished: each message it did not take becomes the session's next queued turn (once,
   * whichever process hears it first; `taken` may lag, so the turn's own events decide).
   */
  async finished(turn: ChatTurnDocument): Promise<void> {
    if (!turn.steering?.length) return;
    const { models, locks, queueAsTurn } = this.dependencies;
    await locks.with(`turn-messages:${turn._id}`, async () => {
      const pending = await this.pending(turn);
      if (pending.length === 0) return;
      const events = await models.TurnEvent.find({ turn: turn._id, type: "user_message" })
        .select({ data: 1 })
        .lean();
      const took = new Set(
        events.map((event) => String((event.data as { messageId?: unknown }).messageId)),
      );
      for (const message of pending) {
        if (took.has(String(message._id))) {
          await this.taken([
            { type: "user_message", data: { messageId: String(message._id), text: message.text } },
          ]);
          continue;
        }
        const queuedTurn = await queueAsTurn(turn, message.text);
        await models.TurnMessage.updateOne(
          { _id: message._id },
          { $set: { status: "queued_as_turn", queuedTurn: new Types.ObjectId(queuedTurn) } },
        );
      }
    });
  }

  /** Sends messages to the drone holding their turn; a drone that misses them gets them again. */
  private send(droneId: string, turnId: string, messages: TurnMessageDocument[]): void {
    const { drones, config, logger } = this.dependencies;
    for (const message of messages) {
      drones
        .to(droneRoom(droneId))
        .timeout(config.droneRequestTimeoutMs)
        .emit(
          "turn_message",
          {
            turnId,
            messageId: String(message._id),
            text: message.text,
            interrupt: message.interrupt,
          },
          (error: Error | null) => {
            if (error) logger.info({ turnId, droneId }, "steering message not acknowledged yet");
          },
        );
    }
  }
}

function finished(turn: ChatTurnDocument): UserError {
  return new UserError(
    "conflict",
    `This turn has ended (${turn.status}); post a new turn instead`,
    {
      details: { reason: "turn_finished", status: turn.status },
    },
  );
}
