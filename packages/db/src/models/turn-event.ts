// One stored turn event. `{turn, seq}` is unique, which makes ingestion idempotent.
import type { TurnEventType } from "@gadget/protocol";
import { type Connection, Schema, type Types } from "mongoose";

export interface TurnEventDocument {
  _id: Types.ObjectId;
  turn: Types.ObjectId;
  seq: number;
  type: TurnEventType;
  data: unknown;
  at: Date;
}

export const turnEventSchema = new Schema<TurnEventDocument>(
  {
    turn: { type: Schema.Types.ObjectId, required: true, ref: "ChatTurn" },
    seq: { type: Number, required: true },
    type: { type: String, required: true },
    data: { type: Schema.Types.Mixed, default: () => ({}) },
    at: { type: Date, required: true },
  },
  { versionKey: false, minimize: false },
);
// Paging a turn's events by seq, the catch-up of live views, and duplicate suppression.
turnEventSchema.index({ turn: 1, seq: 1 }, { unique: true });

export function turnEventModel(connection: Connection) {
  return connection.model<TurnEventDocument>("TurnEvent", turnEventSchema, "turn_events");
}
