// What dispatch records on a turn it could not hand over: a declined work order puts the turn
// back in the queue, a label no online drone has is said once, and an order that cannot be made
// fails the turn.
import { toGadgetError } from "@gadget/protocol";
import type { TurnStore } from "../turns/store/turn-store.ts";

/** Puts a declined turn back in the queue, unless the drone started it after all. */
export async function putBack(
  store: TurnStore,
  turnId: string,
  droneId: string,
  reason: string,
): Promise<void> {
  await store.mutate(turnId, (turn) => {
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

/** Why a turn requiring `requires` waits, when no online drone has them (session page, Activity). */
export function labelWaitWords(requires: readonly string[]): string {
  const one = requires.length === 1;
  return `Waiting for a drone with ${one ? "label" : "labels"} ${requires.join(", ")}: no online drone of yours has ${one ? "it" : "them all"}`;
}

/** A `status` event naming the labels a queued turn waits for, unless it said so already. */
export async function sayWaiting(
  store: TurnStore,
  turnId: string,
  requires: string[],
): Promise<void> {
  const key = requires.join(", ");
  await store.mutate(turnId, (turn) => {
    if (turn.status !== "queued" || turn.waitingForLabels === key) return null;
    return {
      events: [
        {
          type: "status",
          data: { message: labelWaitWords(requires) },
        },
      ],
      set: { waitingForLabels: key },
    };
  });
}

/** Fails a queued turn whose work order cannot be made (its project, session or provider is gone). */
export async function failQueued(store: TurnStore, turnId: string, error: unknown): Promise<void> {
  const problem = toGadgetError(error);
  await store.mutate(turnId, (turn) => {
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
