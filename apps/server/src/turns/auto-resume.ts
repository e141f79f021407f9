// Turns that go on by themselves after their drone went away: a drone that restarted takes its
// turn again from the last checkpoint (session `autoResume` "same-drone" or "any-drone"), within
// the grace or after it (the turn was interrupted meanwhile and its journal names it), and a
// turn interrupted after the grace goes to another matching drone ("any-drone"). At most
// `maxAutoResumes` times per turn; a manual Resume goes through the same re-queue.
import { activeTurnStatuses, type ChatTurnDocument, type Models } from "@gadget/db";
import type { AutoResume } from "@gadget/protocol";
import { Types } from "mongoose";
import type { Dispatcher } from "../dispatch/dispatcher.ts";
import type { IncomingEvent, TurnMutation } from "./store/turn-mutation.ts";
import type { TurnStore } from "./store/turn-store.ts";

/** How many times the server resumes a turn by itself. */
export const maxAutoResumes = 3;

/**
 * The events and fields that put a turn back in the queue. The `retry` status first: what the
 * cut pass streamed is not the answer, and browsers drop it before the pass streams again.
 */
export function requeue(
  message: string,
  fields: Partial<ChatTurnDocument> = {},
): TurnMutation<never> {
  const events: IncomingEvent[] = [
    { type: "status", data: { message: "The pass that was cut starts again", phase: "retry" } },
    { type: "queued", data: { message } },
  ];
  return {
    events,
    set: {
      status: "queued",
      drone: null,
      requestedDrone: null,
      error: null,
      exitReason: null,
      finishedAt: null,
      leaseExpiresAt: null,
      cancelRequestedAt: null,
      waiting: null,
      lostSeq: null,
      pendingApprovals: [],
      queuedAt: new Date(),
      ...fields,
    },
  };
}

export interface AutoResumerDependencies {
  models: Models;
  store: TurnStore;
  dispatcher: Dispatcher;
}

export class AutoResumer {
  constructor(private readonly dependencies: AutoResumerDependencies) {}

  private async policyOf(turn: ChatTurnDocument): Promise<AutoResume> {
    const session = await this.dependencies.models.ChatSession.findById(turn.session)
      .select({ autoResume: 1 })
      .lean();
    return session?.autoResume ?? "same-drone";
  }

  /**
   * The drone came back without `turnId` (it restarted, even after SIGKILL): the turn goes to it
   * again and continues from its last checkpoint. False when the session says `off` or the turn
   * was resumed too often (the caller interrupts it then).
   */
  async restarted(drone: { id: string; name?: string }, turnId: string): Promise<boolean> {
    const { store, dispatcher } = this.dependencies;
    const current = await store.read(turnId);
    if (!current || (await this.policyOf(current)) === "off") return false;
    const outcome = await store.mutate(turnId, (turn) => {
      if (!activeTurnStatuses.includes(turn.status) || String(turn.drone) !== drone.id) return null;
      const count = turn.autoResumes ?? 0;
      if (count >= maxAutoResumes) return null;
      return requeue(`${drone.name ?? "The drone"} restarted; it goes on with this turn`, {
        requestedDrone: new Types.ObjectId(drone.id),
        autoResumes: count + 1,
      });
    });
    if (!outcome?.changed) return false;
    await dispatcher.enqueue(turnId);
    return true;
  }

  /**
   * The drone came back after the grace, its journal naming `turnId` (cut by its restart): the
   * turn, interrupted meanwhile, goes to it again from its last checkpoint. Only a turn this drone
   * held, interrupted because it went away (not stopped by the user, not ended by the drone's own
   * shutdown, not resumed since, on another drone or by hand), while no later turn of its
   * session was posted (the conversation moved on), and unless the session says `off`.
   * `requeued` runs once the turn is queued again and before it is dispatched (a drone whose
   * process lived is told to drop the run it still has, ahead of the work order).
   */
  async returned(
    drone: { id: string; name?: string },
    turnId: string,
    requeued?: () => void,
  ): Promise<boolean> {
    const { store, dispatcher } = this.dependencies;
    const current = await store.read(turnId);
    if (!current || !cutFrom(current, drone.id)) return false;
    if ((await this.policyOf(current)) === "off") return false;
    const later = await this.dependencies.models.ChatTurn.exists({
      session: current.session,
      createdAt: { $gt: current.createdAt },
    });
    if (later) return false;
    const outcome = await store.mutate(turnId, (turn) => {
      const count = turn.autoResumes ?? 0;
      if (!cutFrom(turn, drone.id) || count >= maxAutoResumes) return null;
      return requeue(
        `${drone.name ?? "The drone"} came back with this turn; it goes on (${count + 1} of ${maxAutoResumes} automatic resumes)`,
        { requestedDrone: new Types.ObjectId(drone.id), autoResumes: count + 1 },
      );
    });
    if (!outcome?.changed) return false;
    requeued?.();
    // It left its session's queue when it was interrupted: it joins again, as a Resume would.
    const { position, written } = await dispatcher.queues.join(String(current.session), turnId);
    await written;
    if (position === 0) await dispatcher.enqueue(turnId);
    return true;
  }

  /** A turn was interrupted (its drone did not come back in time): resumed elsewhere if asked. */
  async interrupted(turnId: string): Promise<boolean> {
    const { store, dispatcher } = this.dependencies;
    const current = await store.read(turnId);
    if (current?.status !== "interrupted") return false;
    if ((await this.policyOf(current)) !== "any-drone") return false;
    const outcome = await store.mutate(turnId, (turn) => {
      const count = turn.autoResumes ?? 0;
      if (turn.status !== "interrupted" || count >= maxAutoResumes) return null;
      return requeue(
        `Resumed by itself on another drone (${count + 1} of ${maxAutoResumes} automatic resumes)`,
        { autoResumes: count + 1 },
      );
    });
    if (!outcome?.changed) return false;
    // It left its session's queue when it ended: it joins again, as a Resume would.
    const { position, written } = await dispatcher.queues.join(String(current.session), turnId);
    await written;
    if (position === 0) await dispatcher.enqueue(turnId);
    return true;
  }
}

/** Whether `turn` was interrupted on drone `droneId` because the drone went away. */
function cutFrom(turn: ChatTurnDocument, droneId: string): boolean {
  return (
    turn.status === "interrupted" &&
    String(turn.drone) === droneId &&
    turn.exitReason !== "drone_shutdown"
  );
}
