// Claiming a drone's slot for a turn: the first candidate with one free, in one Redis script that
// also takes the turn's `dispatched` seq; what Redis lost (a counter, a drone's slots) is reloaded
// from MongoDB and the claim tried again.
import type { Models } from "@gadget/db";
import type { DroneSlots } from "../drones/slots.ts";
import { newVersion, type SeqStore } from "../turns/store/seq-store.ts";
import { type Candidate, claimRounds, claimStep } from "./drone-choice.ts";

export interface SlotClaimDependencies {
  slots: DroneSlots;
  seqs: SeqStore;
  models: Models;
}

/**
 * Takes a slot on the first candidate with one free; reloads what Redis lost from MongoDB.
 * "stale" when the turn changed since `expectLast` (the hand-off's copy is out of date). The
 * claim also stamps the turn's new version (`version`), which its write then needs not stamp.
 */
export async function claimSlot(
  { slots, seqs, models }: SlotClaimDependencies,
  turnId: string,
  candidates: Candidate[],
  expectLast: number | undefined,
): Promise<
  { droneId: string; seq: number; name: string | null; version: string } | "stale" | null
> {
  const version = newVersion();
  for (let round = 0; round < claimRounds(candidates); round++) {
    const outcome = await slots.claim(turnId, seqs.keyOf(turnId), candidates, version, expectLast);
    const step = claimStep(outcome, candidates, expectLast);
    switch (step.kind) {
      case "claimed":
        return { droneId: step.droneId, seq: step.seq, name: step.name, version };
      case "full":
        return null;
      case "stale":
        return "stale";
      case "load_counter":
        await seqs.load(turnId);
        break;
      case "load_slots": {
        const drone = await models.Drone.findById(step.droneId).select({ activeTurns: 1 }).lean();
        await slots.load(step.droneId, (drone?.activeTurns ?? []).map(String));
        break;
      }
    }
  }
  return null;
}
