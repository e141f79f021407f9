// Every change to a stored ChatSession goes through here, under the session's lock. FerretDB v1
// runs an update as an unisolated read-modify-write of the whole document (decision 0007): the
// session's drone recorded while a finished turn's exchange joins its history would otherwise
// write the history back as it was, and the next turn would start without the one before it.
import type { ChatSessionDocument, Models } from "@gadget/db";
import type { Types, UpdateQuery } from "mongoose";
import type { Locks } from "../../redis/locks.ts";

export interface SessionWriteDependencies {
  models: Models;
  locks: Locks;
}

/** Which session: its id, and whatever else it must match (its owner, a turn not yet in it). */
export type SessionFilter = { _id: Types.ObjectId | string } & Record<string, unknown>;

/**
 * Updates the session matching `filter` under its lock; answers it as updated, or null when
 * nothing matched.
 * @example await updateSession(dependencies, { _id: sessionId }, { $set: { drone } });
 */
export function updateSession(
  { models, locks }: SessionWriteDependencies,
  filter: SessionFilter,
  update: UpdateQuery<ChatSessionDocument>,
): Promise<ChatSessionDocument | null> {
  return locks.with(`session:${String(filter._id)}`, () =>
    models.ChatSession.findOneAndUpdate(filter, update, { returnDocument: "after" })
      .lean<ChatSessionDocument>()
      .exec(),
  );
}
