// A message a user sent to a turn while it ran or waited (steering): kept until the turn's drone
// took it (`delivered`) or, when the turn ended first, until it became the session's next turn.
import { type Connection, Schema, type Types } from "mongoose";

export type TurnMessageStatus = "pending" | "delivered" | "queued_as_turn";

export interface TurnMessageDocument {
  _id: Types.ObjectId;
  turn: Types.ObjectId;
  session: Types.ObjectId;
  user: Types.ObjectId;
  text: string;
  /** Stop the model call or commands in flight before it is taken. */
  interrupt: boolean;
  status: TurnMessageStatus;
  /** The turn it became when its own turn ended without taking it. */
  queuedTurn: Types.ObjectId | null;
  createdAt: Date;
  deliveredAt: Date | null;
}

export const turnMessageSchema = new Schema<TurnMessageDocument>(
  {
    turn: { type: Schema.Types.ObjectId, required: true, ref: "ChatTurn" },
    session: { type: Schema.Types.ObjectId, required: true, ref: "ChatSession" },
    user: { type: Schema.Types.ObjectId, required: true, ref: "User" },
    text: { type: String, required: true },
    interrupt: { type: Boolean, default: false },
    status: { type: String, required: true, default: "pending" },
    queuedTurn: { type: Schema.Types.ObjectId, default: null, ref: "ChatTurn" },
    createdAt: { type: Date, required: true, default: () => new Date() },
    deliveredAt: { type: Date, default: null },
  },
  { versionKey: false },
);
// A turn's messages, oldest first.
turnMessageSchema.index({ turn: 1, createdAt: 1 });

export function turnMessageModel(connection: Connection) {
  return connection.model<TurnMessageDocument>("TurnMessage", turnMessageSchema, "turn_messages");
}
