// The drones a request may be relayed to: online, still the user's, not revoked.
import type { Models } from "@gadget/db";
import type { Presence, PresenceStore } from "./presence.ts";

/**
 * The user's online drones that pass `accept` (e.g. "holds this workspace"), with their presence.
 * @example const holders = await onlineDrones(dependencies, userId, (presence) => presence.workspaces.includes(slug));
 */
export async function onlineDrones(
  dependencies: { presence: PresenceStore; models: Models },
  userId: string,
  accept: (presence: Presence, droneId: string) => boolean = () => true,
): Promise<Array<{ droneId: string; presence: Presence }>> {
  const droneIds = await dependencies.presence.onlineOf(userId);
  const presences = await dependencies.presence.read(droneIds);
  const candidates = droneIds.flatMap((droneId, index) => {
    const presence = presences[index];
    return presence?.online && accept(presence, droneId) ? [{ droneId, presence }] : [];
  });
  if (candidates.length === 0) return [];
  // One query for all of them: still the user's and not revoked.
  const trusted = await dependencies.models.Drone.find({
    _id: { $in: candidates.map(({ droneId }) => droneId) },
    user: userId,
  })
    .select({ _id: 1, revokedAt: 1 })
    .lean();
  const live = new Set(
    trusted.filter((drone) => !drone.revokedAt).map((drone) => String(drone._id)),
  );
  const online = candidates.filter(({ droneId }) => live.has(droneId));
  return online;
}
