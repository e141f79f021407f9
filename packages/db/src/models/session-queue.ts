// A session's unfinished turns in the order they were posted: the first runs, the others wait on
// the server until every turn ahead of them has finished. Its own small document (read by `_id`),
// written only under the `session-queue:<id>` lock, so no other write to the session can lose it.
import { type Connection, Schema, type Types } from "mongoose";

export interface SessionQueueDocument {
  /** The session's id. */
  _id: Types.ObjectId;
  /** Unfinished turns, oldest posted first. */
  turns: Types.ObjectId[];
}

export const sessionQueueSchema = new Schema<SessionQueueDocument>(
  {
    _id: { type: Schema.Types.ObjectId, required: true },
    turns: { type: [Schema.Types.ObjectId], default: () => [] },
  },
  { versionKey: false },
);

export function sessionQueueModel(connection: Connection) {
  return connection.model<SessionQueueDocument>(
    "SessionQueue",
    sessionQueueSchema,
    "session_queues",
  );
}
