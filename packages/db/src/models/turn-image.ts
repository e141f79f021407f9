// An image sent with a turn's prompt (decision 0051): one document an image, its bytes as BSON
// binary. Images are capped at 2 MiB, far below a document's 16 MiB, so no GridFS (which FerretDB
// v1 does not promise) is needed; the turn keeps the ids, read back by `_id` (the one index
// FerretDB v1 uses).
import type { ImageMediaType } from "@gadget/protocol";
import { type Connection, Schema, type Types } from "mongoose";

export interface TurnImageDocument {
  _id: Types.ObjectId;
  turn: Types.ObjectId;
  user: Types.ObjectId;
  mediaType: ImageMediaType;
  /** The file's name as the browser gave it, if any. */
  name: string | null;
  size: number;
  bytes: Buffer;
  createdAt: Date;
}

export const turnImageSchema = new Schema<TurnImageDocument>(
  {
    turn: { type: Schema.Types.ObjectId, required: true, ref: "ChatTurn" },
    user: { type: Schema.Types.ObjectId, required: true, ref: "User" },
    mediaType: { type: String, required: true },
    name: { type: String, default: null },
    size: { type: Number, required: true },
    bytes: { type: Buffer, required: true },
    createdAt: { type: Date, required: true, default: () => new Date() },
  },
  { versionKey: false },
);

export function turnImageModel(connection: Connection) {
  return connection.model<TurnImageDocument>("TurnImage", turnImageSchema, "turn_images");
}
