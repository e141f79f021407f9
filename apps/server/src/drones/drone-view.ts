// Drones as users see them: stored registration plus live presence and active turn count.
import type { DroneDocument } from "@gadget/db";
import type { Drone } from "@gadget/protocol";
import { Types } from "mongoose";
import { type ServerContext, userRoom } from "../context.ts";
import { toDrone } from "../serialize.ts";

/** The public view of several drones of one user. */
export async function viewDrones(
  context: ServerContext,
  drones: DroneDocument[],
): Promise<Drone[]> {
  const presences = await context.presence.read(drones.map((drone) => String(drone._id)));
  return drones.map((drone, index) =>
    toDrone(drone, presences[index] ?? null, drone.activeTurns?.length ?? 0),
  );
}

/** Sends `drone_update` to the owner's browsers. */
export async function publishDrone(context: ServerContext, droneId: string): Promise<void> {
  const drone = await context.models.Drone.findById(
    new Types.ObjectId(droneId),
  ).lean<DroneDocument>();
  if (!drone || drone.revokedAt) return;
  const [view] = await viewDrones(context, [drone]);
  if (view) context.ide.to(userRoom(String(drone.user))).emit("drone_update", { drone: view });
}
