// Dispatch: one BullMQ job per queued turn (job id = turn id, so no double dispatch), processed
// by `process` (server.ts hands it to the queue's worker); a turn's creator dispatches it at once
// instead (a job only if that does not start or fails). Under the turn's lock, an attempt reads
// the turn and its work order's parts in one round (or takes what the creator read), chooses a
// drone (drone-choice.ts), takes its slot and the `dispatched` seq in one Redis script, stores the
// claim in one write round and sends the work order. A refusal or timeout puts the turn back and
// tries the next drone. A turn nobody can take stays `queued` until a wake-up enqueues it again.
import type { ChatSessionDocument, ChatTurnDocument, Models } from "@gadget/db";
import type { Logger } from "@gadget/logging";
import type { Ack, IWorkOrder } from "@gadget/protocol";
import type { Queue } from "bullmq";
import { Types } from "mongoose";
import { Announcer } from "../announcer.ts";
import type { ResolvedConfig } from "../config.ts";
import type { SecretBox } from "../crypto/secret-box.ts";
import type { PresenceStore } from "../drones/presence.ts";
import { DroneSlots } from "../drones/slots.ts";
import type { Lifecycle } from "../lifecycle.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { RedisClient } from "../redis/connections.ts";
import { keyTag } from "../redis/key-space.ts";
import type { DroneOrders } from "../sockets/drone-orders.ts";
import type { SeqStore } from "../turns/store/seq-store.ts";
import { loadTurnImages } from "../turns/store/turn-images.ts";
import type { TurnIndex } from "../turns/store/turn-index.ts";
import type { TurnStore } from "../turns/store/turn-store.ts";
import { candidates, type Fleet, requirementsOf } from "./drone-choice.ts";
import type { SessionQueues } from "./session-queues.ts";
import { claimSlot } from "./slot-claim.ts";
import { failQueued, putBack, sayWaiting } from "./turn-notes.ts";
import {
  buildWorkOrder,
  loadOrderParts,
  type OrderParts,
  type OrderRefs,
  outcomeOf,
  withFreshSession,
} from "./work-order.ts";

/** What a turn's creator already knows, so the processor reads everything in one round. */
export interface DispatchRefs extends OrderRefs {
  user: string;
}

/** A dispatch job's data: the turn, and its ids when its creator queued it. */
export interface DispatchJob {
  turnId: string;
  refs?: DispatchRefs;
}

/**
 * What the creator of a turn read while storing it, handed to this process's dispatcher so the
 * first attempt reads nothing again. The claim script checks the turn is still as created.
 */
export interface HandOff {
  turn: ChatTurnDocument;
  parts: OrderParts;
  fleet: Fleet;
  /** The turn's own insert, when still in flight: the claim is stored after it. */
  stored?: Promise<unknown>;
  /** The turn's seq counter, when still being made: the slot (and seq) is claimed after it. */
  counted?: Promise<unknown>;
}

/** What one attempt under the turn's lock came to. */
type Attempt =
  | { kind: "none"; waitingFor?: string[] }
  | { kind: "stale" }
  | { kind: "failed"; error: unknown }
  | {
      kind: "sent";
      droneId: string;
      turn: ChatTurnDocument;
      session: ChatSessionDocument;
      answer: Promise<Ack | undefined>;
    };

/** How long a hand-off waits for its job on this process (another process may take the job). */
const handOffTtlMs = 30_000;

/** A drone accepted a turn's work order (its claim was stored before the order left). */
export interface TurnAccepted {
  turnId: string;
  droneId: string;
  /** The turn's session as read for the order (its `drone` is the one preferred so far). */
  session: ChatSessionDocument;
}

/** What a Dispatcher announces. */
export type DispatcherEvents = {
  accepted: [accepted: TurnAccepted];
};

export interface DispatcherDependencies {
  config: Pick<ResolvedConfig, "redisPrefix" | "workOrderAckTimeoutMs" | "droneGraceMs">;
  logger: Logger;
  models: Models;
  /** Redis commands of the slots. */
  redis: RedisClient;
  /** The `dispatch` queue (its jobs are processed by `process`). */
  queue: Queue<DispatchJob>;
  presence: PresenceStore;
  store: TurnStore;
  seqs: SeqStore;
  turnIndex: TurnIndex;
  secretBox: SecretBox;
  metrics: Metrics;
  /** Sends work orders and cancels to drones. */
  orders: DroneOrders;
  lifecycle: Lifecycle;
  /** The order of each session's turns: only a session's first unfinished turn is dispatched. */
  queues: SessionQueues;
}

/** Hands queued turns to drones; announces each accepted work order (`accepted`). */
export class Dispatcher extends Announcer<DispatcherEvents> {
  /** Hand-offs by turn id; one still being read is awaited under the turn's lock. */
  private readonly handOffs = new Map<string, Promise<HandOff | null>>();
  /** Dispatches this process started itself for turns it just created (see `enqueue`). */
  private readonly direct = new Map<string, Promise<unknown>>();
  /** Drones' used slots in Redis: taken by this dispatcher's claims, kept in step with the turns. */
  readonly slots: DroneSlots;

  constructor(private readonly dependencies: DispatcherDependencies) {
    super();
    this.slots = new DroneSlots(dependencies.redis, keyTag(dependencies.config.redisPrefix));
  }

  /**
   * Processes one dispatch job (the queue's processor); nothing thrown leaves it, so a failed
   * dispatch leaves the turn queued and the job done (the sweeper queues the turn again).
   */
  async process(job: DispatchJob): Promise<void> {
    try {
      // This process is already dispatching the turn it created: the job has nothing to add.
      const direct = this.direct.get(job.turnId);
      if (direct) await direct;
      else await this.dispatch(job.turnId, job.refs);
    } catch (error) {
      this.dependencies.logger.error({ err: error, turnId: job.turnId }, "dispatch failed");
    }
  }

  /**
   * Reads what dispatching a new turn needs beyond what its creator read (the project, the user's
   * drones), while the creator stores the turn. Resolves to null when something is missing: the
   * processor then reads for itself and reports the problem on the turn.
   */
  async prepare(
    turn: ChatTurnDocument,
    session: OrderParts["session"],
    provider: OrderParts["provider"],
  ): Promise<HandOff | null> {
    const { models, presence } = this.dependencies;
    try {
      const [project, fleet] = await Promise.all([
        models.Project.findById(turn.project).lean<OrderParts["project"]>(),
        turn.requestedDrone
          ? this.presenceOf([String(turn.requestedDrone)])
          : presence.ofUser(String(turn.user)),
      ]);
      return project ? { turn, parts: { project, session, provider }, fleet } : null;
    } catch {
      return null;
    }
  }

  /**
   * Dispatches a turn its creator just made, on this process, at once: with what the creator
   * read (`handOff`) and without waiting for a worker to take its job (a few milliseconds of
   * Redis round trips). The turn's lock is taken while `handOff` is still being read (null: the
   * attempt reads for itself), the drone chosen and its slot claimed while the turn's own insert
   * is in flight; the claim is stored once that insert is. False when it did not start: the
   * creator then queues the turn's job. A failed dispatch queues it; one finding no drone leaves
   * the turn to the next wake-up, as a job would. If this process dies, the sweeper queues it.
   */
  dispatchNow(turnId: string, refs: DispatchRefs, handOff: Promise<HandOff | null>): boolean {
    if (!this.dependencies.lifecycle.accepting || this.direct.has(turnId)) return false;
    this.handOffs.set(turnId, handOff);
    setTimeout(() => {
      if (this.handOffs.get(turnId) === handOff) this.handOffs.delete(turnId);
    }, handOffTtlMs).unref();
    const direct = this.dispatch(turnId, refs)
      .catch(async (error: unknown) => {
        this.dependencies.logger.error({ err: error, turnId }, "dispatch failed");
        await this.enqueue(turnId, refs).catch(() => undefined);
      })
      .finally(() => {
        this.direct.delete(turnId);
      });
    this.direct.set(turnId, direct);
    this.dependencies.lifecycle.track(direct);
    return true;
  }

  /**
   * Queues a turn for dispatch; a no-op while a job for it is waiting or running. `refs` (the
   * turn's immutable ids) let any processor read the turn and its order's parts in one round.
   */
  async enqueue(turnId: string, refs?: DispatchRefs): Promise<void> {
    await this.dependencies.queue.add("dispatch", refs ? { turnId, refs } : { turnId }, {
      jobId: turnId,
      removeOnComplete: true,
      removeOnFail: true,
    });
  }

  /** The order of each session's turns. */
  get queues(): SessionQueues {
    return this.dependencies.queues;
  }

  /**
   * A turn finished: it leaves its session's queue and the turn now first starts, at once on
   * this process, and through its job too, in case that is running and found the session busy.
   */
  async turnFinished(turn: Pick<ChatTurnDocument, "_id" | "session">): Promise<void> {
    const turnId = await this.dependencies.queues.leave(String(turn.session), String(turn._id));
    if (!turnId || !this.dependencies.lifecycle.accepting) return;
    const direct = this.dispatch(turnId).catch((error: unknown) =>
      this.dependencies.logger.error({ err: error, turnId }, "dispatch failed"),
    );
    this.dependencies.lifecycle.track(direct);
    await this.enqueue(turnId);
  }

  /** Queues every queued turn of a user (a drone connected or a slot was freed). */
  async kickUser(userId: string): Promise<void> {
    for (const turnId of await this.dependencies.turnIndex.queuedOf(userId))
      await this.enqueue(turnId);
  }

  /** Queues every queued turn (periodic safety net for wake-ups that raced a running job). */
  async kickAll(): Promise<void> {
    for (const turnId of await this.dependencies.turnIndex.queued()) await this.enqueue(turnId);
  }

  /** Tries to hand a queued turn to a drone; returns the drone id or null. */
  async dispatch(turnId: string, refs?: DispatchRefs): Promise<string | null> {
    const declined = new Set<string>();
    while (this.dependencies.lifecycle.accepting) {
      const attempt = await this.attempt(turnId, refs, declined);
      if (attempt.kind === "none") {
        if (attempt.waitingFor)
          await sayWaiting(this.dependencies.store, turnId, attempt.waitingFor);
        return null;
      }
      if (attempt.kind === "stale") continue;
      if (attempt.kind === "failed") {
        await failQueued(this.dependencies.store, turnId, attempt.error);
        return null;
      }
      if (await this.settle(turnId, attempt)) return attempt.droneId;
      declined.add(attempt.droneId);
    }
    return null;
  }

  /**
   * Under the turn's lock: reads (or takes the hand-off), claims a slot and the `dispatched` seq
   * in Redis, stores the claim (event and turn in one round) and sends the work order. The
   * mirror in Drone.activeTurns, the indexes and the live relay follow once the lock is released.
   */
  private attempt(
    turnId: string,
    refs: DispatchRefs | undefined,
    declined: ReadonlySet<string>,
  ): Promise<Attempt> {
    const { store, models, presence, secretBox, config } = this.dependencies;
    const handingOff = this.handOffs.get(turnId);
    this.handOffs.delete(turnId);
    return store.locked(turnId, async (apply): Promise<Attempt> => {
      const handOff = await handingOff?.catch(() => null);
      const [turn, prefetched, fleet] = handOff
        ? [handOff.turn, { ok: true as const, value: handOff.parts }, handOff.fleet]
        : await Promise.all([
            store.read(turnId),
            refs ? outcomeOf(loadOrderParts(models, refs)) : null,
            refs ? presence.ofUser(refs.user) : null,
          ]);
      if (turn?.status !== "queued") return { kind: "none" };
      const [parts, drones, ahead, steering, images] = await Promise.all([
        prefetched ?? outcomeOf(loadOrderParts(models, turn)),
        turn.requestedDrone && !handOff
          ? this.presenceOf([String(turn.requestedDrone)])
          : (fleet ?? presence.ofUser(String(turn.user))),
        // A hand-off's turn found its session's queue empty when it was posted.
        handOff ? [] : this.dependencies.queues.ahead(String(turn.session), turnId),
        // Messages sent to it while it waited travel with its work order.
        turn.steering?.length
          ? models.TurnMessage.find({ _id: { $in: turn.steering }, status: "pending" }).lean()
          : [],
        loadTurnImages(models, turn.images),
      ]);
      // Turns of its session posted before it have not finished: the last of them starts it.
      if (ahead.length > 0) return { kind: "none" };
      // A hand-off's turn had nobody ahead; others re-read the session once nobody is (work-order.ts).
      const current =
        handOff || !parts.ok ? parts : await outcomeOf(withFreshSession(models, parts.value));
      if (!current.ok) return { kind: "failed", error: current.error };
      // Built (and checked) before the claim, so nothing can fail between the claim and the send.
      let order: IWorkOrder;
      try {
        order = buildWorkOrder(current.value, secretBox, turn, turn.lastSeq + 1, steering, images);
      } catch (error) {
        return { kind: "failed", error };
      }
      const { project, session } = current.value;
      const requires = requirementsOf(project, turn);
      const chosen = candidates(
        drones,
        {
          sessionDrone: session.drone ? String(session.drone) : null,
          projectSlug: project.slug,
          requires,
        },
        declined,
      );
      // No online drone has the labels: the turn waits, and says for what (once).
      if (chosen.length === 0 && requires.length > 0) return { kind: "none", waitingFor: requires };
      await handOff?.counted;
      const claim = await claimSlot(
        { slots: this.slots, seqs: this.dependencies.seqs, models: this.dependencies.models },
        turnId,
        chosen,
        handOff ? turn.lastSeq : undefined,
      );
      if (claim === "stale") return { kind: "stale" };
      if (!claim) return { kind: "none" };
      const { droneId, seq, name, version } = claim;
      const now = new Date();
      // The claim is stored (event and turn in one round) before the order leaves, so whoever
      // sees the order can see the turn dispatched; the drone's slot and counter are already taken.
      const outcome = await apply(turn, {
        events: [{ type: "dispatched", data: { droneId, ...(name ? { droneName: name } : {}) } }],
        firstSeq: seq,
        together: true,
        claimed: { version },
        after: handOff?.stored,
        set: {
          drone: new Types.ObjectId(droneId),
          startedAt: turn.startedAt ?? now,
          leaseExpiresAt: new Date(
            now.getTime() + config.workOrderAckTimeoutMs + config.droneGraceMs,
          ),
        },
      }).catch(async (error: unknown) => {
        // Not stored: free the slot and the counter's holder again.
        await Promise.all([
          this.slots.remove(droneId, turnId),
          this.dependencies.seqs.allocate(turnId, 0, ""),
        ]);
        throw error;
      });
      const held = drones.find((item) => item.droneId === droneId)?.presence ?? null;
      // Its one turn: no other goes to it, on any server.
      if (held?.ephemeral) await this.dependencies.presence.markSpent(droneId);
      const answer = this.dependencies.orders.send(droneId, { ...order, nextSeq: seq + 1 }, held);
      return { kind: "sent", droneId, turn: outcome.turn, session, answer };
    });
  }

  private async presenceOf(droneIds: string[]): Promise<Fleet> {
    const presences = await this.dependencies.presence.read(droneIds);
    return droneIds.map((droneId, index) => ({ droneId, presence: presences[index]! }));
  }

  /** Waits for the drone's answer; a refusal or silence puts the turn back. True if accepted. */
  private async settle(
    turnId: string,
    attempt: Extract<Attempt, { kind: "sent" }>,
  ): Promise<boolean> {
    const { config, metrics, logger } = this.dependencies;
    const { droneId, turn } = attempt;
    const answer = await attempt.answer;
    if (answer?.ok) {
      // Not before: the session's preferred drone is not written beside the claim and order.
      await this.announce("accepted", { turnId, droneId, session: attempt.session });
      metrics.dispatchLatency.observe((Date.now() - turn.queuedAt.getTime()) / 1000);
      logger.info({ turnId, droneId }, "turn dispatched");
      return true;
    }
    let reason: string;
    if (answer) reason = answer.error.message;
    else {
      reason = `no answer within ${config.workOrderAckTimeoutMs} ms`;
      // It may still start the turn late: tell it not to.
      this.dependencies.orders.cancel(droneId, turnId);
    }
    logger.info({ turnId, droneId, reason }, "work order declined");
    await putBack(this.dependencies.store, turnId, droneId, reason);
    return false;
  }

  /** Resolves once the dispatches this process started itself are done (shutdown). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.direct.values()]);
  }
}
