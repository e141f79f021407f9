// Dispatch through BullMQ: one job per queued turn (job id = turn id, so no double dispatch).
// A turn's creator dispatches it at once on its own process too (the job then finds it taken).
// The processor, under the turn's lock, reads the turn and what its work order is made of in one
// round (or takes what the turn's creator read on this process), picks a drone and takes its slot
// and the `dispatched` seq in one Redis script, stores the claim in one write round and sends the
// work order. A refusal or timeout puts the turn back and tries the next drone. A turn nobody can take stays `queued`; drone connects,
// finished turns and a periodic sweep enqueue it again.
import type { ChatTurnDocument, Models } from "@gadget/db";
import type { Logger } from "@gadget/logging";
import { type Ack, type IWorkOrder, labelsMatch, toGadgetError } from "@gadget/protocol";
import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
import { Types } from "mongoose";

import type { ResolvedConfig } from "../config.ts";
import type { SecretBox } from "../crypto/secret-box.ts";
import type { Presence, PresenceStore } from "../drones/presence.ts";
import { DroneSlots, type SlotCandidate } from "../drones/slots.ts";
import type { Lifecycle } from "../lifecycle.ts";
import type { Metrics } from "../metrics/metrics.ts";
import { type DronesNamespace, droneRoom } from "../sockets/rooms.ts";
import type { SeqStore } from "../turns/store/seq-store.ts";
import type { TurnIndex } from "../turns/store/turn-index.ts";
import type { TurnStore } from "../turns/store/turn-store.ts";
import { buildWorkOrder, loadOrderParts, type OrderParts, type OrderRefs } from "./work-order.ts";

/** What a turn's creator already knows, so the processor reads everything in one round. */
export interface DispatchRefs extends OrderRefs {
  user: string;
}

interface DispatchJob {
  turnId: string;
  refs?: DispatchRefs;
}

interface Candidate extends SlotCandidate {
  name: string | null;
  /** It ran the session's latest turn, so it holds the session's worktree and branch. */
  holdsSession: boolean;
  hasWorkspace: boolean;
  order: number;
}

type Fleet = Array<{ droneId: string; presence: Presence }>;

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
}

/** What one attempt under the turn's lock came to. */
type Attempt =
  | { kind: "none"; waitingFor?: string[] }
  | { kind: "stale" }
  | { kind: "failed"; error: unknown }
  | { kind: "sent"; droneId: string; turn: ChatTurnDocument; answer: Promise<Ack | undefined> };

/** How long a hand-off waits for its job on this process (another process may take the job). */
const handOffTtlMs = 30_000;

export interface DispatcherDependencies {
  config: Pick<
    ResolvedConfig,
    | "redisUrl"
    | "redisPrefix"
    | "serverId"
    | "dispatchConcurrency"
    | "workOrderAckTimeoutMs"
    | "droneGraceMs"
  >;
  logger: Logger;
  models: Models;
  /** Redis commands of the slots (the queue and worker open their own connections). */
  redis: Redis;
  presence: PresenceStore;
  store: TurnStore;
  seqs: SeqStore;
  turnIndex: TurnIndex;
  secretBox: SecretBox;
  metrics: Metrics;
  /** The drones' namespace (a getter: it exists only once the HTTP server is built). */
  drones: () => DronesNamespace;
  lifecycle: Lifecycle;
}

export class Dispatcher {
  private readonly queue: Queue<DispatchJob>;
  private worker: Worker<DispatchJob> | null = null;
  private readonly connections: Redis[] = [];
  private readonly handOffs = new Map<string, HandOff>();
  /** Dispatches this process started itself for turns it just created (see `enqueue`). */
  private readonly direct = new Map<string, Promise<unknown>>();
  /** Drones' used slots in Redis: taken by this dispatcher's claims, kept in step with the turns. */
  readonly slots: DroneSlots;

  constructor(private readonly dependencies: DispatcherDependencies) {
    this.slots = new DroneSlots(dependencies.redis, dependencies.config.redisPrefix);
    const connection = this.connection();
    this.queue = new Queue<DispatchJob>("dispatch", {
      connection,
      prefix: `${dependencies.config.redisPrefix}:bull`,
    });
  }

  private connection(): Redis {
    const redis = new Redis(this.dependencies.config.redisUrl, { maxRetriesPerRequest: null });
    redis.on("error", (error) =>
      this.dependencies.logger.warn({ err: error }, "dispatch redis error"),
    );
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
          // This process is already dispatching the turn it created: the job has nothing to add.
          const direct = this.direct.get(job.data.turnId);
          if (direct) await direct;
          else await this.dispatch(job.data.turnId, job.data.refs);
        } catch (error) {
          this.dependencies.logger.error(
            { err: error, turnId: job.data.turnId },
            "dispatch failed",
          );
        }
      },
      {
        connection: this.connection(),
        prefix: `${this.dependencies.config.redisPrefix}:bull`,
        concurrency: this.dependencies.config.dispatchConcurrency,
      },
    );
    this.worker.on("error", (error) =>
      this.dependencies.logger.warn({ err: error }, "dispatch worker error"),
    );
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
   * Redis round trips). The drone is chosen and its slot claimed while the turn's own insert is
   * in flight; the claim is stored once that insert is. The creator queues the job all the same
   * (`enqueue`): whichever process takes it finds the turn dispatched, or tries again.
   */
  dispatchNow(turnId: string, refs: DispatchRefs, handOff: HandOff): void {
    if (!this.worker || !this.dependencies.lifecycle.accepting || this.direct.has(turnId)) return;
    this.handOffs.set(turnId, handOff);
    setTimeout(() => {
      if (this.handOffs.get(turnId) === handOff) this.handOffs.delete(turnId);
    }, handOffTtlMs).unref();
    const direct = this.dispatch(turnId, refs)
      .catch((error: unknown) =>
        this.dependencies.logger.error({ err: error, turnId }, "dispatch failed"),
      )
      .finally(() => {
        this.direct.delete(turnId);
      });
    this.direct.set(turnId, direct);
    this.dependencies.lifecycle.track(direct);
  }

  /**
   * Queues a turn for dispatch; a no-op while a job for it is waiting or running. `refs` (the
   * turn's immutable ids) let any processor read the turn and its order's parts in one round.
   */
  async enqueue(turnId: string, refs?: DispatchRefs): Promise<void> {
    await this.queue.add("dispatch", refs ? { turnId, refs } : { turnId }, {
      jobId: turnId,
      removeOnComplete: true,
      removeOnFail: true,
    });
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
        if (attempt.waitingFor) await this.sayWaiting(turnId, attempt.waitingFor);
        return null;
      }
      if (attempt.kind === "stale") continue;
      if (attempt.kind === "failed") {
        await this.fail(turnId, attempt.error);
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
    const handOff = this.handOffs.get(turnId);
    this.handOffs.delete(turnId);
    return store.locked(turnId, async (apply): Promise<Attempt> => {
      const [turn, prefetched, fleet] = handOff
        ? [handOff.turn, { ok: true as const, value: handOff.parts }, handOff.fleet]
        : await Promise.all([
            store.read(turnId),
            refs ? outcomeOf(loadOrderParts(models, refs)) : null,
            refs ? presence.ofUser(refs.user) : null,
          ]);
      if (turn?.status !== "queued") return { kind: "none" };
      const [parts, drones] = await Promise.all([
        prefetched ?? outcomeOf(loadOrderParts(models, turn)),
        turn.requestedDrone && !handOff
          ? this.presenceOf([String(turn.requestedDrone)])
          : (fleet ?? presence.ofUser(String(turn.user))),
      ]);
      if (!parts.ok) return { kind: "failed", error: parts.error };
      // Built (and checked) before the claim, so nothing can fail between the claim and the send.
      let order: IWorkOrder;
      try {
        order = buildWorkOrder(parts.value, secretBox, turn, turn.lastSeq + 1);
      } catch (error) {
        return { kind: "failed", error };
      }
      const requires = [
        ...new Set([...(parts.value.project.requires ?? []), ...(turn.requires ?? [])]),
      ];
      const candidates = this.candidates(drones, parts.value, declined, requires);
      // No online drone has the labels: the turn waits, and says for what (once).
      if (candidates.length === 0 && requires.length > 0)
        return { kind: "none", waitingFor: requires };
      const claim = await this.claim(turnId, candidates, handOff ? turn.lastSeq : undefined);
      if (claim === "stale") return { kind: "stale" };
      if (!claim) return { kind: "none" };
      const { droneId, seq, name } = claim;
      const now = new Date();
      // The claim is stored (event and turn in one round) before the order leaves, so whoever
      // sees the order can see the turn dispatched; the drone's slot and counter are already taken.
      const outcome = await apply(turn, {
        events: [{ type: "dispatched", data: { droneId, ...(name ? { droneName: name } : {}) } }],
        firstSeq: seq,
        together: true,
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
      const session = parts.value.session;
      if (String(session.drone ?? "") !== droneId) {
        // Written only when the session moves to another drone: its next turn prefers this one.
        // Not waited for: the work order need not wait on a preference for later turns.
        this.dependencies.lifecycle.track(
          models.ChatSession.updateOne(
            { _id: session._id },
            { $set: { drone: new Types.ObjectId(droneId) } },
          ).catch((error: unknown) =>
            this.dependencies.logger.warn(
              { err: error, turnId },
              "could not record the session's drone",
            ),
          ),
        );
      }
      const held = drones.find((item) => item.droneId === droneId)?.presence ?? null;
      // Its one turn: no other goes to it, on any server.
      if (held?.ephemeral) await this.dependencies.presence.markSpent(droneId);
      const answer = this.send(droneId, { ...order, nextSeq: seq + 1 }, held);
      return { kind: "sent", droneId, turn: outcome.turn, answer };
    });
  }

  /**
   * Online drones of the user with their presence: the one holding the session's worktree first,
   * then those holding the project's clone, then at random.
   */
  private candidates(
    drones: Array<{ droneId: string; presence: Presence }>,
    parts: OrderParts,
    declined: ReadonlySet<string>,
    requires: readonly string[],
  ): Candidate[] {
    const candidates: Candidate[] = [];
    const sessionDrone = parts.session.drone ? String(parts.session.drone) : null;
    for (const { droneId, presence } of drones) {
      if (!presence.online || declined.has(droneId)) continue;
      // An ephemeral drone takes one turn; one without the labels takes none of this kind.
      if (presence.ephemeral && presence.spent) continue;
      if (requires.length > 0 && !labelsMatch(presence.labels, requires)) continue;
      candidates.push({
        droneId,
        capacity: presence.capacity ?? 1,
        name: presence.name,
        holdsSession: droneId === sessionDrone,
        hasWorkspace: presence.workspaces.includes(parts.project.slug),
        order: Math.random(),
      });
    }
    candidates.sort(
      (a, b) =>
        Number(b.holdsSession) - Number(a.holdsSession) ||
        Number(b.hasWorkspace) - Number(a.hasWorkspace) ||
        a.order - b.order,
    );
    return candidates;
  }

  /**
   * Takes a slot on the first candidate with one free; reloads what Redis lost from MongoDB.
   * "stale" when the turn changed since `expectLast` (the hand-off's copy is out of date).
   */
  private async claim(
    turnId: string,
    candidates: Candidate[],
    expectLast: number | undefined,
  ): Promise<{ droneId: string; seq: number; name: string | null } | "stale" | null> {
    const { seqs, models } = this.dependencies;
    // Each pass reloads at most one thing Redis lost (the counter, or one drone's slots).
    for (let reloads = 0; reloads <= candidates.length + 1; reloads++) {
      const outcome = await this.slots.claim(turnId, seqs.keyOf(turnId), candidates, expectLast);
      if (outcome.status === "full") return null;
      if (outcome.status === "changed") return "stale";
      if (outcome.status === "claimed") {
        const name = candidates.find((item) => item.droneId === outcome.droneId)?.name ?? null;
        return { droneId: outcome.droneId, seq: outcome.seq, name };
      }
      if (outcome.status === "no_counter") {
        // A lost counter is rebuilt from MongoDB; a copy of the turn cannot be proven current.
        if (expectLast !== undefined) return "stale";
        await seqs.load(turnId);
        continue;
      }
      const drone = await models.Drone.findById(outcome.droneId).select({ activeTurns: 1 }).lean();
      await this.slots.load(outcome.droneId, (drone?.activeTurns ?? []).map(String));
    }
    return null;
  }

  private async presenceOf(droneIds: string[]): Promise<Fleet> {
    const presences = await this.dependencies.presence.read(droneIds);
    return droneIds.map((droneId, index) => ({ droneId, presence: presences[index]! }));
  }

  /** Sends the work order; resolves with the drone's answer, or undefined if none came in time. */
  private send(
    droneId: string,
    order: IWorkOrder,
    presence: Presence | null,
  ): Promise<Ack | undefined> {
    const { config } = this.dependencies;
    // A drone connected to this process gets the order on its socket: a broadcast to its room
    // would first ask Redis how many servers there are, then publish to all of them.
    const local =
      presence?.serverId === config.serverId && presence.socketId
        ? this.dependencies.drones().sockets.get(presence.socketId)
        : undefined;
    if (local?.connected && local.rooms.has(droneRoom(droneId))) {
      return (
        local.timeout(config.workOrderAckTimeoutMs).emitWithAck("work_order", order) as Promise<Ack>
      ).catch(() => undefined);
    }
    const answers = this.dependencies
      .drones()
      .to(droneRoom(droneId))
      .timeout(config.workOrderAckTimeoutMs)
      .emitWithAck("work_order", order) as Promise<Ack[]>;
    return answers.then(
      (list) => list[0] ?? { ok: false, error: { code: "unavailable", message: "not connected" } },
      () => undefined,
    );
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
      metrics.dispatchLatency.observe((Date.now() - turn.queuedAt.getTime()) / 1000);
      logger.info({ turnId, droneId }, "turn dispatched");
      return true;
    }
    let reason: string;
    if (answer) reason = answer.error.message;
    else {
      reason = `no answer within ${config.workOrderAckTimeoutMs} ms`;
      // It may still start the turn late: tell it not to.
      this.dependencies
        .drones()
        .to(droneRoom(droneId))
        .emit("turn_cancel", { turnId }, () => undefined);
    }
    logger.info({ turnId, droneId, reason }, "work order declined");
    await this.release(turnId, droneId, reason);
    return false;
  }

  /** Puts a declined turn back in the queue, unless the drone started it after all. */
  private async release(turnId: string, droneId: string, reason: string): Promise<void> {
    await this.dependencies.store.mutate(turnId, (turn) => {
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

  /** A `status` event naming the labels a queued turn waits for, unless it said so already. */
  private async sayWaiting(turnId: string, requires: string[]): Promise<void> {
    const key = requires.join(", ");
    await this.dependencies.store.mutate(turnId, (turn) => {
      if (turn.status !== "queued" || turn.waitingForLabels === key) return null;
      return {
        events: [
          {
            type: "status",
            data: {
              message: `Waiting for a drone with ${requires.length === 1 ? "label" : "labels"} ${key}: no online drone of yours has ${requires.length === 1 ? "it" : "them all"}`,
            },
          },
        ],
        set: { waitingForLabels: key },
      };
    });
  }

  private async fail(turnId: string, error: unknown): Promise<void> {
    const problem = toGadgetError(error);
    await this.dependencies.store.mutate(turnId, (turn) => {
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

  /** Stops taking jobs (waits for running ones and direct dispatches) and closes the queue. */
  async close(): Promise<void> {
    await this.worker?.close();
    await Promise.allSettled([...this.direct.values()]);
    await this.queue.close();
    await Promise.all(this.connections.map((redis) => redis.quit().catch(() => undefined)));
  }
}

/** A promise's outcome as a value, so one failed read does not reject its siblings' round. */
async function outcomeOf<T>(
  promise: Promise<T>,
): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  try {
    return { ok: true, value: await promise };
  } catch (error) {
    return { ok: false, error };
  }
}
