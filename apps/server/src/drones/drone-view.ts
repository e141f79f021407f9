// Drones as users see them: stored registration plus live presence and active turn count.
import type { DroneDocument } from "@gadget/db";
import type { Drone } from "@gadget/protocol";
import { toDrone } from "../serialize.ts";
import type { PresenceStore } from "./presence.ts";

/** The public view of several drones of one user. */
export async function viewDrones(
  dependencies: { presence: PresenceStore },
  drones: DroneDocument[],
): Promise<Drone[]> {
  const presences = await dependencies.presence.read(drones.map((drone) => String(drone._id)));
  return drones.map((drone, index) =>
    toDrone(drone, presences[index] ?? null, drone.activeTurns?.length ?? 0),
  );
}
