// What queued turns wait for by labels, for `/metrics`: per requirement set, how many turns wait
// and how many online drones of their users match it (0 is the alert: no drone can take them).
import type { Models } from "@gadget/db";
import { labelsMatch } from "@gadget/protocol";
import type { PresenceStore } from "../drones/presence.ts";

export interface LabelWait {
  /** The requirements as the waiting status names them (`gpu, os=linux`). */
  requires: string;
  queued: number;
  matchingOnline: number;
}

/** Read at scrape time from the turns that said what they wait for (at most `limit` of them). */
export async function labelWaits(
  dependencies: { models: Models; presence: PresenceStore },
  limit = 2_000,
): Promise<LabelWait[]> {
  const waiting = await dependencies.models.ChatTurn.find({
    status: "queued",
    waitingForLabels: { $ne: null },
  })
    .select({ user: 1, waitingForLabels: 1 })
    .limit(limit)
    .lean();
  const byRequires = new Map<string, { queued: number; users: Set<string> }>();
  for (const turn of waiting) {
    const key = turn.waitingForLabels as string;
    const entry = byRequires.get(key) ?? { queued: 0, users: new Set<string>() };
    entry.queued += 1;
    entry.users.add(String(turn.user));
    byRequires.set(key, entry);
  }
  const fleets = new Map<string, Awaited<ReturnType<PresenceStore["ofUser"]>>>();
  const waits: LabelWait[] = [];
  for (const [key, { queued, users }] of byRequires) {
    const requires = key.split(", ");
    let matchingOnline = 0;
    for (const userId of users) {
      const fleet = fleets.get(userId) ?? (await dependencies.presence.ofUser(userId));
      fleets.set(userId, fleet);
      matchingOnline += fleet.filter(
        ({ presence }) => presence.online && labelsMatch(presence.labels, requires),
      ).length;
    }
    waits.push({ requires: key, queued, matchingOnline });
  }
  return waits;
}
