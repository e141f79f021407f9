// Dispatch through BullMQ: one job per queued turn (job id = turn id, so no double dispatch).
// The processor picks one of the user's online drones with a free slot, claims the turn
// (`dispatched` event), sends the work order with an ack timeout, and on refusal or timeout
// puts the turn back and tries the next drone. A turn nobody can take stays `queued`; drone
// connects, finished turns and a periodic sweep enqueue it again.
import type { ChatTurnDocument, DroneDocument } from "@gadget/db";
import { type Ack, type IWorkOrder, toGadgetError } from "@gadget/protocol";
import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";

import { droneRoom, type ServerContext } from "../context.ts";
import { buildWorkOrder, loadOrderParts, type OrderParts } from "./work-order.ts";

interface DispatchJob {
  turnId: string;
}

interface Candidate {
  droneId: string;
  capacity: number;
  hasWorkspace: boolean;
  order: number;
}

export class Dispatcher {
  private readonly queue: Queue<DispatchJob>;
  private worker: Worker<DispatchJob> | null = null;
  private readonly connections: Redis[] = [];

  constructor(private readonly context: ServerContext) {
    const connection = this.connection();
    this.queue = new Queue<DispatchJob>("dispatch", {
      connection,
      prefix: `${context.config.redisPrefix}:bull`,
    });
  }

  private connection(): Redis {
    const redis = new Redis(this.context.config.redisUrl, { maxRetriesPerRequest: null });
    redis.on("error", (error) => this.context.logger.warn({ err: error }, "dispatch redis error"));
    this.connections.push(redis);
    return redis;
  }

  /** Starts processing jobs on this process. */
  start(): void {
    this.worker = new Worker<DispatchJob>(
      "dispatch",
      async (job) => {
        // The job edge: nothing thrown leaves it; a failed dispatch leaves the turn queued.
        try {
          await this.dispatch(job.data.turnId);
        } catch (error) {
          this.context.logger.error({ err: error, turnId: job.data.turnId }, "dispatch failed");
        }
      },
      {
        connection: this.connection(),
        prefix: `${this.context.config.redisPrefix}:bull`,
        concurrency: this.context.config.dispatchConcurrency,
      },
    );
    this.worker.on("error", (error) =>
      this.context.logger.warn({ err: error }, "dispatch worker error"),
    );
  }

  /** Queues a turn for dispatch; a no-op while a job for it is waiting or running. */
  async enqueue(turnId: string): Promise<void> {
    await this.queue.add(
      "dispatch",
      { turnId },
      { jobId: turnId, removeOnComplete: true, removeOnFail: true },
    );
  }

  /** Queues every queued turn of a user (a drone connected or a slot was freed). */
  async kickUser(userId: string): Promise<void> {
    for (const turnId of await this.context.turnIndex.queuedOf(userId)) await this.enqueue(turnId);
  }

  /** Queues every queued turn (periodic safety net for wake-ups that raced a running job). */
  async kickAll(): Promise<void> {
    for (const turnId of await this.context.turnIndex.queued()) await this.enqueue(turnId);
  }

  /** Tries to hand a queued turn to a drone; returns the drone id or null. */
  async dispatch(turnId: string): Promise<string | null> {
    const { models, presence } = this.context;
    if (!this.context.accepting) return null;
    const turn = await models.ChatTurn.findById(turnId).lean<ChatTurnDocument>();
    if (turn?.status !== "queued") return null;
    const userId = String(turn.user);
    const parts = loadOrderParts(models, turn);
    let project: OrderParts["project"];
    try {
      project = (await parts).project;
    } catch (error) {
      await this.fail(turnId, error);
      return null;
    }
    // Only drones that are (or were lately) connected: read by _id, never by scanning the fleet.
    const droneIds = turn.requestedDrone
      ? [String(turn.requestedDrone)]
      : await presence.onlineOf(userId);
    const presences = await presence.read(droneIds);
    const candidates: Candidate[] = [];
    for (const [index, droneId] of droneIds.entries()) {
      const state = presences[index];
      if (!state?.online) continue;
      candidates.push({
        droneId,
        capacity: state.capacity ?? 1,
        hasWorkspace: state.workspaces.includes(project.slug),
        order: Math.random(),
      });
    }
    // Drones holding the project's workspace first; among equals, spread at random. Used slots
    // are checked per candidate under the lock (one read by _id), not for the whole fleet.
    candidates.sort((a, b) => Number(b.hasWorkspace) - Number(a.hasWorkspace) || a.order - b.order);
    for (const candidate of candidates) {
      const outcome = await this.offer(turnId, userId, candidate, parts);
      if (outcome === "accepted") return candidate.droneId;
      if (outcome === "gone") return null;
    }
    return null;
  }

  /** The drone, if it belongs to `userId` and is not revoked. */
  private async droneOf(droneId: string, userId: string): Promise<DroneDocument | null> {
    const drone = await this.context.models.Drone.findById(droneId)
      .select({ user: 1, name: 1, activeTurns: 1, revokedAt: 1 })
      .lean<DroneDocument>();
    return drone && String(drone.user) === userId && !drone.revokedAt ? drone : null;
  }

  /** Claims the turn for one drone and sends the work order. */
  private async offer(
    turnId: string,
    userId: string,
    candidate: Candidate,
    parts: Promise<OrderParts>,
  ): Promise<"accepted" | "declined" | "full" | "gone"> {
    const { store, locks, config, secretBox, metrics, logger } = this.context;
    const { droneId } = candidate;
    // Capacity is read from the database (Drone.activeTurns) under a per-user lock: every server's
    // dispatcher claims a user's turns one at a time, so a drone's slots are never over-committed.
    const claim = await locks.with(`dispatch-user:${userId}`, async () => {
      const drone = await this.droneOf(droneId, userId);
      if (!drone || (drone.activeTurns?.length ?? 0) >= candidate.capacity) return null;
      const outcome = await store.mutate<ChatTurnDocument>(turnId, (turn) => {
        if (turn.status !== "queued") return null;
        const now = new Date();
        return {
          events: [{ type: "dispatched", data: { droneId, droneName: drone.name } }],
          set: {
            drone: drone._id,
            startedAt: turn.startedAt ?? now,
            leaseExpiresAt: new Date(
              now.getTime() + config.workOrderAckTimeoutMs + config.droneGraceMs,
            ),
          },
          result: turn,
        };
      });
      return outcome?.changed ? outcome.turn : ("gone" as const);
    });
    if (claim === null) return "full";
    if (claim === "gone") return "gone";
    const turn = claim;

    let order: IWorkOrder;
    try {
      order = buildWorkOrder(await parts, secretBox, turn, turn.lastSeq + 1);
    } catch (error) {
      await this.release(
        turnId,
        droneId,
        `could not build the work order: ${toGadgetError(error).message}`,
      );
      await this.fail(turnId, error);
      return "gone";
    }
    let answer: Ack | undefined;
    let reason = "no answer";
    try {
      const answers = (await this.context.drones
        .to(droneRoom(droneId))
        .timeout(config.workOrderAckTimeoutMs)
        .emitWithAck("work_order", order)) as Ack[];
      answer = answers[0];
      if (!answer) reason = "not connected";
      else if (!answer.ok) reason = answer.error.message;
    } catch {
      reason = `no answer within ${config.workOrderAckTimeoutMs} ms`;
      // It may still start the turn late: tell it not to.
      this.context.drones.to(droneRoom(droneId)).emit("turn_cancel", { turnId }, () => undefined);
    }
    if (answer?.ok) {
      metrics.dispatchLatency.observe((Date.now() - turn.queuedAt.getTime()) / 1000);
      logger.info({ turnId, droneId }, "turn dispatched");
      return "accepted";
    }
    logger.info({ turnId, droneId, reason }, "work order declined");
    await this.release(turnId, droneId, reason);
    return "declined";
  }

  /** Puts a declined turn back in the queue, unless the drone started it after all. */
  private async release(turnId: string, droneId: string, reason: string): Promise<void> {
    await this.context.store.mutate(turnId, (turn) => {
      if (turn.status !== "dispatched" || String(turn.drone) !== droneId) return null;
      return {
        events: [
          {
            type: "status",
            data: { message: `Drone declined the work order (${reason}); waiting for a drone` },
          },
        ],
        set: { status: "queued", drone: null, leaseExpiresAt: null },
      };
    });
  }

  private async fail(turnId: string, error: unknown): Promise<void> {
    const problem = toGadgetError(error);
    await this.context.store.mutate(turnId, (turn) => {
      if (turn.status !== "queued") return null;
      return {
        events: [
          { type: "error", data: { code: problem.code, message: problem.message } },
          {
            type: "done",
            data: { reason: "error", passes: turn.stats.passes, totalCost: turn.stats.cost },
          },
        ],
      };
    });
  }

  /** Stops taking jobs (waits for running ones) and closes the queue. */
  async close(): Promise<void> {
    await this.worker?.close();
    await this.queue.close();
    await Promise.all(this.connections.map((redis) => redis.quit().catch(() => undefined)));
  }
}
