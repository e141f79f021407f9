// Every change to a stored Drone goes under the drone's lock, as its slots, its connection and its
// revocation already did. FerretDB v1 runs an update as an unisolated read-modify-write of the
// whole document (decision 0007): a rename made as the drone was revoked could write it back
// unrevoked, and its credential would work again.
import type { DroneDocument, Models } from "@gadget/db";
import type { Types, UpdateQuery } from "mongoose";
import type { Locks } from "../redis/locks.ts";

export interface DroneWriteDependencies {
  models: Models;
  locks: Locks;
}

/** Which drone: its id, and whatever else it must match (its owner, not revoked). */
export type DroneFilter = { _id: Types.ObjectId | string } & Record<string, unknown>;

/**
 * Updates the drone matching `filter` under its lock; answers it as updated, or null when nothing
 * matched. Not for code already holding `drone:<id>` (the lock is not re-entrant).
 * @example await updateDrone(dependencies, { _id: droneId }, { $set: { updateRefused } });
 */
export function updateDrone(
  { models, locks }: DroneWriteDependencies,
  filter: DroneFilter,
  update: UpdateQuery<DroneDocument>,
): Promise<DroneDocument | null> {
  return locks.with(`drone:${String(filter._id)}`, () =>
    models.Drone.findOneAndUpdate(filter, update, { returnDocument: "after" })
      .lean<DroneDocument>()
      .exec(),
  );
}
