// A drone's connection dropped, or came back: its running turns say so at once (`drone_lost`,
// `waiting: drone_offline` until the grace ends; `drone_back`). While it is offline the turn is
// detached from it: the server numbers its own events after what is stored, and the drone's
// unsent events are numbered after `drone_back` when it returns (the `reconciled` message).
import { activeTurnStatuses, type ChatTurnDocument } from "@gadget/db";
import type { DroneRebase } from "@gadget/protocol";
import type { TurnStore } from "./store/turn-store.ts";

export interface DroneLossDependencies {
  store: TurnStore;
  /** How long a turn waits for its drone before it is interrupted (config `droneGraceMs`). */
  droneGraceMs: number;
}

function runsOn(turn: ChatTurnDocument, droneId: string): boolean {
  return activeTurnStatuses.includes(turn.status) && String(turn.drone) === droneId;
}

export class DroneLoss {
  constructor(private readonly dependencies: DroneLossDependencies) {}

  /** The drone's connection dropped at `since`: each of its turns waits for it, detached. */
  async lost(
    drone: { id: string; name?: string },
    turnIds: readonly string[],
    since: Date,
  ): Promise<void> {
    const { store, droneGraceMs } = this.dependencies;
    const until = new Date(since.getTime() + droneGraceMs);
    for (const turnId of turnIds) {
      await store.locked(turnId, async (apply) => {
        const turn = await store.read(turnId);
        if (!turn || !runsOn(turn, drone.id)) return;
        if (turn.lostSeq != null) {
          await apply(turn, { set: { leaseExpiresAt: until } });
          return;
        }
        await apply(turn, {
          events: [
            {
              type: "drone_lost",
              data: {
                drone: drone.id,
                ...(drone.name ? { droneName: drone.name } : {}),
                since: since.toISOString(),
                graceMs: droneGraceMs,
              },
              at: since,
            },
          ],
          detach: true,
          set: { leaseExpiresAt: until, waiting: { reason: "drone_offline", since, until } },
        });
      });
    }
  }

  /**
   * The drone is connected again and still runs `running`: those of its turns that were detached
   * take it back (`drone_back`). Answers how the drone renumbers each one's unsent events.
   */
  async back(drone: { id: string; name?: string }, running: readonly string[]) {
    const { store, droneGraceMs } = this.dependencies;
    const rebased: DroneRebase[] = [];
    for (const turnId of running) {
      const outcome = await store.mutate(turnId, (turn) => {
        if (!runsOn(turn, drone.id) || turn.lostSeq == null) return null;
        const since = turn.waiting?.since ? new Date(turn.waiting.since).getTime() : Date.now();
        return {
          events: [
            {
              type: "drone_back",
              data: {
                drone: drone.id,
                ...(drone.name ? { droneName: drone.name } : {}),
                offlineMs: Math.max(0, Date.now() - since),
              },
            },
          ],
          attach: true,
          set: {
            lostSeq: null,
            waiting: null,
            leaseExpiresAt: new Date(Date.now() + droneGraceMs),
          },
          result: { storedUpTo: turn.lostSeq - 1 },
        };
      });
      const back = outcome?.events[0];
      if (outcome?.result && back) {
        rebased.push({ turnId, storedUpTo: outcome.result.storedUpTo, nextSeq: back.seq + 1 });
      }
    }
    return rebased;
  }
}
