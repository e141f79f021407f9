// Every change to a stored Drone goes under the drone's lock, as its slots, its connection and its
// revocation already did; every change to a registration token under the token's. FerretDB v1
// runs an update as an unisolated read-modify-write of the whole document (decision 0007): a
// rename made as the drone was revoked could write it back unrevoked, and its credential would
// work again; a registration marking a reusable token used could do the same to its revocation.
import type { DroneDocument, Models, RegistrationTokenDocument } from "@gadget/db";
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

/**
 * Updates the registration token matching `filter` (its `_id` is the token's hash) under its
 * lock; answers it as updated, or null when nothing matched.
 * @example await updateRegistrationToken(dependencies, { _id: hash }, { $set: { usedAt } });
 */
export function updateRegistrationToken(
  { models, locks }: DroneWriteDependencies,
  filter: { _id: string } & Record<string, unknown>,
  update: UpdateQuery<RegistrationTokenDocument>,
): Promise<RegistrationTokenDocument | null> {
  return locks.with(`registration-token:${filter._id}`, () =>
    models.RegistrationToken.findOneAndUpdate(filter, update, { returnDocument: "after" })
      .lean<RegistrationTokenDocument>()
      .exec(),
  );
}
