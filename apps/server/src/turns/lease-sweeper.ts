// Runs on every server: turns whose drone lease lapsed become `interrupted` (the turn lock makes
// exactly one server do it), and queued turns are re-enqueued in case a wake-up was missed.
// The Redis indexes (turn-index.ts, drone slots) make each sweep cheap; every `fullSweepEvery`
// sweeps the database itself is scanned to repair what those indexes or Drone.activeTurns missed.
import { activeTurnStatuses, type ChatTurnDocument, type Models } from "@gadget/db";
import type { Logger } from "@gadget/logging";
import type { Dispatcher } from "../dispatch/dispatcher.ts";
import type { PresenceStore } from "../drones/presence.ts";
import type { Lifecycle } from "../lifecycle.ts";
import type { Locks } from "../redis/locks.ts";
import type { AutoResumer } from "./auto-resume.ts";
import type { TurnIndex } from "./store/turn-index.ts";
import type { TurnStore } from "./store/turn-store.ts";
import type { TurnService } from "./turn-service.ts";

const fullSweepEvery = 30;

export interface LeaseSweeperDependencies {
  models: Models;
  store: TurnStore;
  turnIndex: TurnIndex;
  /** Re-enqueues queued turns; its drone slots are repaired here. */
  dispatcher: Dispatcher;
  presence: PresenceStore;
  locks: Locks;
  lifecycle: Lifecycle;
  logger: Logger;
  /** Resumes an interrupted turn elsewhere when its session asks for it. */
  autoResumer: AutoResumer;
}

export interface LeaseSweeperTimes {
  sweepIntervalMs: number;
  /** How long a renewed lease lasts (config `droneGraceMs`). */
  droneGraceMs: number;
}

export class LeaseSweeper {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private sweeps = 0;
  /** When this process began sweeping: a lease that lapsed before it could see drones waits. */
  private startedAt = Date.now();

  private readonly dependencies: LeaseSweeperDependencies & LeaseSweeperTimes;

  constructor(
    dependencies: LeaseSweeperDependencies,
    times: LeaseSweeperTimes,
    private readonly turns: TurnService,
  ) {
    this.dependencies = { ...dependencies, ...times };
  }

  start(): void {
    this.startedAt = Date.now();
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = this.sweep()
        .then(() => undefined)
        .catch((error: unknown) =>
          this.dependencies.logger.error({ err: error }, "lease sweep failed"),
        )
        .finally(() => {
          this.running = null;
        });
    }, this.dependencies.sweepIntervalMs);
  }

  /** Interrupts every turn whose lease lapsed; returns how many. */
  async sweep(): Promise<number> {
    const { turnIndex, dispatcher } = this.dependencies;
    this.sweeps++;
    if (this.sweeps % fullSweepEvery === 0) await this.repair();
    let interrupted = 0;
    // A lease may have lapsed while no server was up to see its drone (every server restarted):
    // the drone gets the grace to reconnect from when this process could first see it.
    const seeing = Date.now() >= this.startedAt + this.dependencies.droneGraceMs;
    for (const turnId of seeing ? await turnIndex.lapsed(Date.now()) : []) {
      // A lease that could not be renewed because the database was down is renewed now, if the
      // drone is online and its last heartbeat still named the turn.
      if (await this.stillRunning(turnId)) continue;
      const outcome = await this.turns.finishNow(
        turnId,
        "interrupted",
        "The drone running this turn did not come back in time; everything received so far is kept",
        (current) =>
          activeTurnStatuses.includes(current.status) &&
          current.leaseExpiresAt !== null &&
          current.leaseExpiresAt.getTime() < Date.now(),
      );
      if (outcome?.status === "interrupted") {
        interrupted++;
        await this.dependencies.autoResumer.interrupted(turnId);
      } else if (!outcome || !activeTurnStatuses.includes(outcome.status))
        await turnIndex.forget(turnId);
    }
    if (this.dependencies.lifecycle.accepting) await dispatcher.kickAll();
    return interrupted;
  }

  /**
   * After Redis came back (possibly empty): rebuild its indexes from the database and enqueue the
   * queued turns again at once.
   */
  async recover(): Promise<void> {
    await this.repair();
    if (this.dependencies.lifecycle.accepting) await this.dependencies.dispatcher.kickAll();
  }

  /** Renews the lease of a lapsed turn whose drone is online and still runs it; true if so. */
  private async stillRunning(turnId: string): Promise<boolean> {
    const { store, presence, droneGraceMs } = this.dependencies;
    const turn = await store.read(turnId);
    if (!turn?.drone || !activeTurnStatuses.includes(turn.status)) return false;
    const [state] = await presence.read([String(turn.drone)]);
    if (!state?.online || !state.runningTurns.includes(turnId)) return false;
    const renewed = await store.mutate(turnId, (current) =>
      activeTurnStatuses.includes(current.status) && String(current.drone) === String(turn.drone)
        ? { set: { leaseExpiresAt: new Date(Date.now() + droneGraceMs) }, result: true }
        : null,
    );
    return renewed?.result === true;
  }

  /** Re-derives the Redis indexes and drones' slots (Redis, Drone.activeTurns) from MongoDB. */
  async repair(): Promise<void> {
    const { models, turnIndex, locks } = this.dependencies;
    const live = await models.ChatTurn.find({ status: { $in: ["queued", ...activeTurnStatuses] } })
      .select({ user: 1, status: 1, leaseExpiresAt: 1, queuedAt: 1, drone: 1 })
      .lean<ChatTurnDocument[]>();
    const held = new Map<string, Set<string>>();
    for (const turn of live) {
      await turnIndex.record(turn);
      if (activeTurnStatuses.includes(turn.status) && turn.drone) {
        const key = String(turn.drone);
        if (!held.has(key)) held.set(key, new Set());
        held.get(key)!.add(String(turn._id));
      }
    }
    const drones = await models.Drone.find({ revokedAt: null }).select({ activeTurns: 1 }).lean();
    for (const drone of drones) {
      const droneId = String(drone._id);
      const truth = held.get(droneId) ?? new Set<string>();
      await this.repairSlots(droneId, truth);
      const listed = new Set((drone.activeTurns ?? []).map(String));
      if (sameSet(truth, listed)) continue;
      await locks.with(`drone:${drone._id}`, async () => {
        // Re-check each differing turn under the lock: the snapshot above may be older than a dispatch.
        const current = await models.Drone.findById(drone._id).select({ activeTurns: 1 }).lean();
        const ids = new Set([...(current?.activeTurns ?? []).map(String), ...truth]);
        const slots = [];
        for (const id of ids) {
          const turn = await models.ChatTurn.findById(id).select({ status: 1, drone: 1 }).lean();
          if (
            turn &&
            activeTurnStatuses.includes(turn.status) &&
            String(turn.drone) === String(drone._id)
          ) {
            slots.push(turn._id);
          }
        }
        await models.Drone.updateOne({ _id: drone._id }, { $set: { activeTurns: slots } });
      });
    }
  }

  /**
   * Makes a drone's Redis slots list the turns it holds. Each differing turn is re-checked under
   * its own lock, which a dispatch holds from its claim until the claim is stored.
   */
  private async repairSlots(droneId: string, truth: ReadonlySet<string>): Promise<void> {
    const { store, dispatcher } = this.dependencies;
    const listed = await dispatcher.slots.list(droneId);
    if (listed === null) return; // Not loaded: the next claim or connection loads it.
    const differing = new Set([
      ...listed.filter((id) => !truth.has(id)),
      ...[...truth].filter((id) => !listed.includes(id)),
    ]);
    for (const turnId of differing) {
      await store.locked(turnId, async () => {
        const turn = await store.read(turnId);
        const holds =
          turn !== null &&
          activeTurnStatuses.includes(turn.status) &&
          String(turn.drone) === droneId;
        await dispatcher.slots.adjust(droneId, holds ? [] : [turnId], holds ? [turnId] : []);
      });
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }
}

function sameSet(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  return a.size === b.size && [...a].every((id) => b.has(id));
}
