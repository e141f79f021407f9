// Drone → server: batches of numbered events, checkpoints and lease renewals for the turns a
// drone holds. A batch is checked against the turn's seq counter in Redis (held by this drone?
// continuing the sequence?), stored through the group-commit writer, relayed once stored, applied
// to the ChatTurn by the accumulator, and acknowledged. A re-sent batch stores nothing twice.
import {
  type Heartbeat,
  type TurnCheckpoint,
  type TurnEvent,
  type TurnEventBatch,
  UserError,
  validationError,
} from "@gadget/protocol";
import { z } from "zod";
import type { ServerContext } from "../context.ts";
import { isHeldBy } from "./turn-service.ts";

function notHeld(turnId: string, status: string) {
  return new UserError(
    "forbidden",
    `This drone does not hold turn ${turnId} (status ${status}); stop working on it`,
    { details: { turnId, status } },
  );
}

async function turnMeta(
  context: ServerContext,
  turnId: string,
  known: { sessionId: string; userId: string } | null,
) {
  let meta = context.turnMeta.get(turnId) ?? known;
  if (!meta) {
    const turn = await context.models.ChatTurn.findById(turnId)
      .select({ session: 1, user: 1 })
      .lean();
    if (!turn) throw new UserError("not_found", `Turn ${turnId} not found`);
    meta = { sessionId: String(turn.session), userId: String(turn.user) };
  }
  if (!context.turnMeta.has(turnId)) {
    if (context.turnMeta.size > 10_000) context.turnMeta.clear();
    context.turnMeta.set(turnId, meta);
  }
  return meta;
}

/** Stores a batch; answers the highest seq of the turn. */
export async function ingestBatch(
  context: ServerContext,
  droneId: string,
  batch: TurnEventBatch,
): Promise<{ lastSeq: number }> {
  const incoming = batch.events;
  for (let index = 1; index < incoming.length; index++) {
    if (incoming[index]!.seq !== incoming[index - 1]!.seq + 1) {
      throw validationError(
        new z.ZodError([
          {
            code: "custom",
            path: ["events", index, "seq"],
            message: "seqs in a batch must be consecutive",
            input: incoming[index]!.seq,
          },
        ]),
        "event batch",
      );
    }
  }
  const { turnId } = batch;
  // Batches of a turn are checked in the order they arrived (a drone pipelines them).
  const earlier = context.turnChains.get(`check:${turnId}`) ?? Promise.resolve();
  const checked = earlier.then(() => {
    const ends = incoming.some((event) => event.type === "done");
    return context.seqs.append(turnId, droneId, incoming[0]!.seq, incoming.length, ends);
  });
  const checkDone = checked.then(
    () => undefined,
    () => undefined,
  );
  context.turnChains.set(`check:${turnId}`, checkDone);
  void checkDone.then(() => {
    if (context.turnChains.get(`check:${turnId}`) === checkDone)
      context.turnChains.delete(`check:${turnId}`);
  });
  const outcome = await checked;
  if (outcome.status === "not_held") {
    const turn = await context.models.ChatTurn.findById(turnId).select({ status: 1 }).lean();
    throw notHeld(turnId, turn?.status ?? "unknown");
  }
  if (outcome.status === "gap") {
    throw new UserError(
      "conflict",
      `Events of turn ${turnId} must continue at seq ${outcome.last + 1}; resend from there`,
      { details: { lastSeq: outcome.last } },
    );
  }
  // The counter carries the turn's session and user; older counters need one read.
  const meta = await turnMeta(context, turnId, outcome.meta);
  const now = new Date();
  const events = incoming.map((event) => ({ ...event, at: event.at ?? now }) as TurnEvent);
  const fresh = events.filter((event) => event.seq > outcome.previous);
  // All of the batch is written (duplicates are ignored by the unique index), so a batch whose
  // earlier write failed is stored when the drone sends it again.
  const written = context.eventWriter.write(turnId, events);
  // Batches of one turn are written concurrently but applied and relayed in seq order.
  const previous = context.turnChains.get(turnId) ?? Promise.resolve();
  let applied: Promise<void> = Promise.resolve();
  const relayed = previous.then(async () => {
    await written;
    if (fresh.length === 0) return;
    context.metrics.eventsIngested.inc(fresh.length);
    const accumulated = context.accumulator.add(turnId, fresh);
    applied = accumulated.applied;
    // Status changes (approval, done) are applied before anyone sees the events.
    if (accumulated.beforeRelay) await applied;
    await context.relay.publish({
      turnId,
      sessionId: meta.sessionId,
      userId: meta.userId,
      events: fresh,
    });
  });
  const settled = relayed.catch(() => undefined);
  context.turnChains.set(turnId, settled);
  void settled.then(() => {
    if (context.turnChains.get(turnId) === settled) context.turnChains.delete(turnId);
  });
  await relayed;
  // The ack also waits for what the events changed on the turn (the next batch's relay does not).
  await applied;
  return { lastSeq: outcome.last };
}

/** Stores the turn's messages so far, for resuming it anywhere. */
export async function storeCheckpoint(
  context: ServerContext,
  droneId: string,
  checkpoint: TurnCheckpoint,
): Promise<void> {
  const outcome = await context.store.mutate(checkpoint.turnId, (turn) => {
    if (!isHeldBy(turn, droneId)) throw notHeld(checkpoint.turnId, turn.status);
    return { set: { messages: checkpoint.messages, resumeState: checkpoint.state ?? null } };
  });
  if (!outcome) throw new UserError("not_found", `Turn ${checkpoint.turnId} not found`);
}

/**
 * Renews the lease of every turn the drone says it runs; answers the ones it must stop
 * (finished, cancelled, interrupted, or held by another drone).
 */
export async function renewLeases(
  context: ServerContext,
  droneId: string,
  beat: Pick<Heartbeat, "activeTurns">,
  options: { force?: boolean } = {},
): Promise<string[]> {
  const stop: string[] = [];
  const grace = context.config.droneGraceMs;
  let turnIds = beat.activeTurns;
  if (!options.force && turnIds.length > 0) {
    // Most heartbeats change nothing: Redis shows the drone still holds the turn, no cancel is
    // pending and more than half the lease is left. Only the others read the turn (under its lock).
    const [holders, leases] = await Promise.all([
      context.seqs.holders(turnIds),
      context.turnIndex.leases(turnIds),
    ]);
    const renewAfter = Date.now() + grace / 2;
    turnIds = turnIds.filter((_, index) => {
      const held = holders[index];
      const lease = leases[index];
      return !(held?.holder === droneId && !held.cancel && lease && lease > renewAfter);
    });
  }
  for (const turnId of turnIds) {
    const outcome = await context.store.mutate(turnId, (turn) => {
      if (!isHeldBy(turn, droneId) || turn.cancelRequestedAt) return { result: false };
      // Renew once half the lease is used, not on every heartbeat: fewer writes, same guarantee.
      const left = (turn.leaseExpiresAt?.getTime() ?? 0) - Date.now();
      if (!options.force && left > grace / 2) return { result: true };
      return { set: { leaseExpiresAt: new Date(Date.now() + grace) }, result: true };
    });
    if (!outcome?.result) stop.push(turnId);
  }
  return stop;
}
