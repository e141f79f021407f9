// Every change to a stored Project goes under the project's lock. FerretDB v1 runs an update as an
// unisolated read-modify-write of the whole document (decision 0007), and an edit of the forge
// reads the stored one to keep its token and webhook secret: unlocked, an edit made while a new
// webhook secret was stored wrote the old one back, and the secret just shown stopped working.
import type { Types } from "mongoose";
import type { Locks } from "../redis/locks.ts";

/**
 * Runs `work` (reads and writes of one project) under the project's lock, shared by every server.
 * @example await withProjectLock(locks, projectId, () => models.Project.updateOne(...));
 */
export function withProjectLock<T>(
  locks: Locks,
  projectId: Types.ObjectId | string,
  work: () => Promise<T>,
): Promise<T> {
  return locks.with(`project:${String(projectId)}`, work);
}
