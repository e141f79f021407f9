// Which drone a queued turn goes to, as pure decisions: the candidates in the order the turn
// prefers them, and what to do with each answer of the slot claim (drones/slots.ts), whose Redis
// script takes the first candidate with a free slot. The dispatcher does the reading and writing.
import { labelsMatch } from "@gadget/protocol";
import type { Presence } from "../drones/presence.ts";
import type { ClaimOutcome, SlotCandidate } from "../drones/slots.ts";

/** The user's drones with their presence, as dispatch reads them. */
export type Fleet = Array<{ droneId: string; presence: Presence }>;

export interface Candidate extends SlotCandidate {
  name: string | null;
  /** It ran the session's latest turn, so it holds the session's worktree and branch. */
  holdsSession: boolean;
  hasWorkspace: boolean;
  order: number;
}

/** What a turn asks of its drone. */
export interface Wanted {
  /** The drone that ran the session's latest turn (a new fork's: its source's), if any. */
  sessionDrone: string | null;
  /** The project's slug: a drone listing it holds its clone. */
  projectSlug: string;
  /** Labels every candidate must have (the project's and the turn's). */
  requires: readonly string[];
}

/** The labels a turn needs: its project's and its own, once each. */
export function requirementsOf(
  project: { requires?: readonly string[] | null },
  turn: { requires?: readonly string[] | null },
): string[] {
  return [...new Set([...(project.requires ?? []), ...(turn.requires ?? [])])];
}

/**
 * Online drones of the fleet that may take the turn: not `declined` (they refused it already),
 * not a spent ephemeral drone, with every required label. The one holding the session's worktree
 * first, then those holding the project's clone, then at random (`random` draws the order).
 * @example candidates(fleet, { sessionDrone: null, projectSlug: "demo", requires: [] }, new Set())
 */
export function candidates(
  fleet: Fleet,
  wanted: Wanted,
  declined: ReadonlySet<string>,
  random: () => number = Math.random,
): Candidate[] {
  const chosen: Candidate[] = [];
  for (const { droneId, presence } of fleet) {
    if (!presence.online || declined.has(droneId)) continue;
    // An ephemeral drone takes one turn; one without the labels takes none of this kind.
    if (presence.ephemeral && presence.spent) continue;
    if (presence.draining) continue; // Stopping: it finishes what it runs, nothing more.
    if (wanted.requires.length > 0 && !labelsMatch(presence.labels, wanted.requires)) continue;
    chosen.push({
      droneId,
      capacity: presence.capacity ?? 1,
      name: presence.name,
      holdsSession: droneId === wanted.sessionDrone,
      hasWorkspace: presence.workspaces.includes(wanted.projectSlug),
      order: random(),
    });
  }
  return chosen.sort(
    (a, b) =>
      Number(b.holdsSession) - Number(a.holdsSession) ||
      Number(b.hasWorkspace) - Number(a.hasWorkspace) ||
      a.order - b.order,
  );
}

/** What dispatch does next with an answer of the slot claim. */
export type ClaimStep =
  | { kind: "claimed"; droneId: string; seq: number; name: string | null }
  /** No candidate has a free slot: the turn stays queued. */
  | { kind: "full" }
  /** The copy of the turn dispatch holds is out of date: read it and try again. */
  | { kind: "stale" }
  /** Redis lost the turn's counter: rebuild it from MongoDB and claim again. */
  | { kind: "load_counter" }
  /** Redis lost the drone's slot set: load it from MongoDB and claim again. */
  | { kind: "load_slots"; droneId: string };

/**
 * The next step after the claim script answered `outcome` for `candidates`. `expectLast` is set
 * when dispatch works from a copy of the turn (its creator's hand-off): a lost counter cannot
 * prove that copy current, so the copy is stale.
 */
export function claimStep(
  outcome: ClaimOutcome,
  candidates: readonly Candidate[],
  expectLast: number | undefined,
): ClaimStep {
  switch (outcome.status) {
    case "claimed": {
      const name = candidates.find((item) => item.droneId === outcome.droneId)?.name ?? null;
      return { kind: "claimed", droneId: outcome.droneId, seq: outcome.seq, name };
    }
    case "full":
      return { kind: "full" };
    case "changed":
      return { kind: "stale" };
    case "no_counter":
      return expectLast === undefined ? { kind: "load_counter" } : { kind: "stale" };
    case "unloaded":
      return { kind: "load_slots", droneId: outcome.droneId };
  }
}

/** How many claims one dispatch attempt makes at most: each reloads at most one thing Redis lost. */
export function claimRounds(candidates: readonly Candidate[]): number {
  return candidates.length + 2;
}
