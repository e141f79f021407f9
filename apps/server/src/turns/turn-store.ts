// The one way a ChatTurn changes: under the turn's lock, read it, let the caller decide,
// store new events (idempotently), derive the turn's state from them, write it, then relay
// the events and the updated turn.
import { activeTurnStatuses, type ChatTurnDocument, isDuplicateKeyError } from "@gadget/db";
import type { AgentEvent, TurnEvent } from "@gadget/protocol";
import { isFinalTurnStatus } from "@gadget/protocol";
import { Types } from "mongoose";
import { type ServerContext, userRoom } from "../context.ts";
import { ownedBy } from "../owned.ts";
import { toTurn } from "../serialize.ts";
import { applyEvents, type TurnState } from "./turn-state.ts";

/** A new event of the server's own (queued, dispatched, done…), numbered when stored. */
export type IncomingEvent = AgentEvent & { at?: Date };

export interface TurnMutation<R> {
  /** The server's own new events: numbered from the turn's seq counter and stored. */
  events?: IncomingEvent[];
  /** Drone events already numbered and stored (ingestion): only applied to the turn. */
  storedEvents?: TurnEvent[];
  /** Fields written after the event-derived state (e.g. `status: "queued"` on resume). */
  set?: Partial<ChatTurnDocument>;
  result?: R;
}

export interface MutationOutcome<R> {
  turn: ChatTurnDocument;
  events: TurnEvent[];
  result: R | undefined;
  changed: boolean;
}

function stateOf(turn: ChatTurnDocument): TurnState {
  return {
    status: turn.status,
    stats: { ...turn.stats },
    response: turn.response ?? null,
    error: turn.error ?? null,
    exitReason: turn.exitReason ?? null,
    changes: turn.changes ?? [],
    pendingApprovals: turn.pendingApprovals ?? [],
    createdAt: turn.createdAt,
    startedAt: turn.startedAt ?? null,
    finishedAt: turn.finishedAt ?? null,
    leaseExpiresAt: turn.leaseExpiresAt ?? null,
  };
}

/** Serialised writes to turns plus the throttled `turn_update` push. */
export class TurnStore {
  private readonly pendingUpdates = new Map<string, ChatTurnDocument>();
  private readonly updateTimers = new Map<string, NodeJS.Timeout>();

  constructor(private readonly context: ServerContext) {}

  /**
   * Runs `decide` on the current turn under its lock and applies what it returns.
   * `decide` may throw a GadgetError to refuse; returning null changes nothing.
   * @example await store.mutate(id, (turn) => turn.status === "queued" ? { events: [cancelledDone] } : null);
   */
  async mutate<R>(
    turnId: string,
    decide: (turn: ChatTurnDocument) => TurnMutation<R> | null | Promise<TurnMutation<R> | null>,
  ): Promise<MutationOutcome<R> | null> {
    const { models, locks } = this.context;
    const outcome = await locks.with(`turn:${turnId}`, async () => {
      const turn = await models.ChatTurn.findById(turnId).lean<ChatTurnDocument>();
      if (!turn) return null;
      const mutation = await decide(turn);
      if (!mutation)
        return {
          before: turn,
          turn,
          events: [],
          result: undefined,
          changed: false,
          statusChanged: false,
        };
      const fresh = mutation.events ?? [];
      const stored = mutation.storedEvents ?? [];
      if (!fresh.length && !stored.length && !mutation.set) {
        return {
          before: turn,
          turn,
          events: [],
          result: mutation.result,
          changed: false,
          statusChanged: false,
        };
      }
      const now = new Date();
      const state = { ...applyEvents(stateOf(turn), [...stored, ...fresh], now), ...mutation.set };
      const events: TurnEvent[] = [];
      if (fresh.length > 0) {
        // The holder changes with the events that change it, in the same atomic step, so a drone
        // batch racing this write is either before it or refused.
        const drone = mutation.set?.drone !== undefined ? mutation.set.drone : turn.drone;
        const status = state.status ?? turn.status;
        const holder = activeTurnStatuses.includes(status) && drone ? String(drone) : "";
        const first = await this.context.seqs.allocate(turnId, fresh.length, holder);
        fresh.forEach((incoming, index) => {
          events.push({
            seq: first + index,
            type: incoming.type,
            data: incoming.data,
            at: incoming.at ?? now,
          } as TurnEvent);
        });
        await models.TurnEvent.insertMany(
          events.map((event) => ({ ...event, turn: turn._id })),
          { ordered: false },
        ).catch((error: unknown) => {
          if (!isDuplicateKeyError(error)) throw error;
        });
      }
      const lastSeq = Math.max(
        turn.lastSeq ?? 0,
        ...stored.map((event) => event.seq),
        ...events.map((event) => event.seq),
      );
      const update: Partial<ChatTurnDocument> = { ...state, lastSeq };
      const updated = { ...turn, ...update } as ChatTurnDocument;
      // The exchange joins the session's history before the turn is stored as completed: whatever
      // frees the drone's slot (this write, or the sweeper re-deriving slots from statuses) must
      // never let the session's next turn be dispatched without it.
      if (updated.status === "completed" && turn.status !== "completed")
        await this.remember(updated);
      await models.ChatTurn.updateOne({ _id: turn._id }, { $set: update });
      return {
        before: turn,
        turn: updated,
        events,
        result: mutation.result,
        changed: true,
        statusChanged: updated.status !== turn.status,
      };
    });
    if (!outcome) return null;
    if (outcome.changed) {
      await this.afterWrite(outcome.before, outcome.turn, outcome.events, outcome.statusChanged);
    }
    return {
      turn: outcome.turn,
      events: outcome.events,
      result: outcome.result,
      changed: outcome.changed,
    };
  }

  private async afterWrite(
    before: ChatTurnDocument,
    turn: ChatTurnDocument,
    events: TurnEvent[],
    statusChanged: boolean,
  ) {
    const { relay, metrics, dispatcher, logger, turnIndex } = this.context;
    const turnId = String(turn._id);
    const heldBefore = activeTurnStatuses.includes(before.status) ? String(before.drone) : null;
    const heldAfter = activeTurnStatuses.includes(turn.status) ? String(turn.drone) : null;
    if (heldBefore !== heldAfter) {
      if (heldBefore) await this.moveSlot(heldBefore, turn._id, "$pull");
      if (heldAfter) await this.moveSlot(heldAfter, turn._id, "$addToSet");
    }
    if (
      statusChanged ||
      String(before.leaseExpiresAt ?? "") !== String(turn.leaseExpiresAt ?? "")
    ) {
      await turnIndex.record(turn);
    }
    if (statusChanged && isFinalTurnStatus(turn.status)) await this.context.seqs.retire(turnId);
    if (statusChanged && isFinalTurnStatus(before.status)) await this.context.seqs.keep(turnId);
    if (events.length > 0) {
      await relay.publish({
        turnId,
        sessionId: String(turn.session),
        userId: String(turn.user),
        events,
      });
    }
    this.pushUpdate(turn, statusChanged);
    if (statusChanged && isFinalTurnStatus(turn.status)) {
      metrics.turnsFinished.inc({ status: turn.status });
      // A drone slot was freed (or a queued turn ended): start the user's next queued turn.
      dispatcher.kickUser(String(turn.user)).catch((error: unknown) => {
        logger.error({ err: error }, "could not re-enqueue queued turns");
      });
    }
  }

  /** Adds or removes a turn from a drone's used slots (Drone.activeTurns). */
  private async moveSlot(droneId: string, turnId: Types.ObjectId, operator: "$pull" | "$addToSet") {
    await this.context.locks.with(`drone:${droneId}`, () =>
      this.context.models.Drone.updateOne(
        { _id: new Types.ObjectId(droneId) },
        { [operator]: { activeTurns: turnId } },
      ),
    );
  }

  /** A completed turn's prompt and answer join its session's history (the next turns' context). */
  private async remember(turn: ChatTurnDocument) {
    const sessionId = String(turn.session);
    await this.context.locks.with(`session:${sessionId}`, () =>
      this.context.models.ChatSession.updateOne(
        { _id: turn.session },
        {
          $push: {
            history: {
              $each: [
                { role: "user", content: turn.prompt, createdAt: turn.createdAt },
                ...(turn.response
                  ? [
                      {
                        role: "assistant",
                        content: turn.response,
                        createdAt: turn.finishedAt ?? new Date(),
                      },
                    ]
                  : []),
              ],
            },
          },
        },
      ),
    );
  }

  /** Sends `turn_update` now (status changes) or at most every turnUpdateIntervalMs. */
  pushUpdate(turn: ChatTurnDocument, immediate: boolean): void {
    const turnId = String(turn._id);
    this.pendingUpdates.set(turnId, turn);
    if (immediate) {
      const timer = this.updateTimers.get(turnId);
      if (timer) clearTimeout(timer);
      this.updateTimers.delete(turnId);
      this.flushUpdate(turnId);
      return;
    }
    if (this.updateTimers.has(turnId)) return;
    this.updateTimers.set(
      turnId,
      setTimeout(() => {
        this.updateTimers.delete(turnId);
        this.flushUpdate(turnId);
      }, this.context.config.turnUpdateIntervalMs),
    );
  }

  private flushUpdate(turnId: string): void {
    const turn = this.pendingUpdates.get(turnId);
    this.pendingUpdates.delete(turnId);
    if (!turn) return;
    this.context.ide.to(userRoom(String(turn.user))).emit("turn_update", { turn: toTurn(turn) });
  }

  /** Sends every pending `turn_update` now (shutdown). */
  flushAll(): void {
    for (const [turnId, timer] of this.updateTimers) {
      clearTimeout(timer);
      this.flushUpdate(turnId);
    }
    this.updateTimers.clear();
  }

  /** Reads a turn that belongs to `userId`, or null. */
  async findOwned(userId: string, turnId: string): Promise<ChatTurnDocument | null> {
    if (!Types.ObjectId.isValid(turnId)) return null;
    return ownedBy(
      await this.context.models.ChatTurn.findById(turnId).lean<ChatTurnDocument>(),
      userId,
    );
  }
}
