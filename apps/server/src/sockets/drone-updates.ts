// `drone_update` to a drone owner's browsers, when the drone connects or goes away.
import type { DroneDocument, Models } from "@gadget/db";
import { Types } from "mongoose";
import { viewDrones } from "../drones/drone-view.ts";
import type { PresenceStore } from "../drones/presence.ts";
import { type IdeNamespace, userRoom } from "./rooms.ts";

/** Sends `drone_update` to the owner's browsers. */
export async function publishDrone(
  dependencies: { models: Models; presence: PresenceStore; ide: IdeNamespace },
  droneId: string,
): Promise<void> {
  const drone = await dependencies.models.Drone.findById(
    new Types.ObjectId(droneId),
  ).lean<DroneDocument>();
  if (!drone || drone.revokedAt) return;
  const [view] = await viewDrones(dependencies, [drone]);
  if (view) dependencies.ide.to(userRoom(String(drone.user))).emit("drone_update", { drone: view });
}
