// One delivery a project's forge sent to its webhook URL, and what it did: a turn started or
// followed up, ignored or refused with the reason. The forge's delivery id is unique per project,
// so a repeated delivery is found, not acted on twice. `comment` is the forge user's comment
// that says the turn started and is edited with its summary when it ends.
import type { ForgeEventOutcome } from "@gadget/protocol";
import { type Connection, Schema, type Types } from "mongoose";

export interface ForgeEventDocument {
  _id: Types.ObjectId;
  project: Types.ObjectId;
  user: Types.ObjectId;
  /** The forge's delivery id; one of ours (`none-<id>`) when it sent none, so never matched. */
  deliveryId: string;
  event: string;
  action: string | null;
  sender: string | null;
  /** The issue or pull request it was about. */
  number: number | null;
  /** Whether `number` is a pull request (GitLab: merge request), where the comment goes. */
  onPullRequest: boolean;
  outcome: ForgeEventOutcome;
  reason: string;
  session: Types.ObjectId | null;
  turn: Types.ObjectId | null;
  /** The forge's id of the comment posted for the turn; null until posted. */
  comment: number | null;
  /** The commit a commit status was on (one follow-up per failing commit); null otherwise. */
  commit: string | null;
  createdAt: Date;
}

export const forgeEventSchema = new Schema<ForgeEventDocument>(
  {
    project: { type: Schema.Types.ObjectId, required: true, ref: "Project" },
    user: { type: Schema.Types.ObjectId, required: true, ref: "User" },
    deliveryId: { type: String, required: true },
    event: { type: String, required: true },
    action: { type: String, default: null },
    sender: { type: String, default: null },
    number: { type: Number, default: null },
    onPullRequest: { type: Boolean, default: false },
    outcome: { type: String, required: true },
    reason: { type: String, required: true },
    session: { type: Schema.Types.ObjectId, default: null, ref: "ChatSession" },
    turn: { type: Schema.Types.ObjectId, default: null, ref: "ChatTurn" },
    comment: { type: Number, default: null },
    commit: { type: String, default: null },
    createdAt: { type: Date, required: true, default: () => new Date() },
  },
  { versionKey: false },
);
// A delivery id is acted on once per project.
forgeEventSchema.index({ project: 1, deliveryId: 1 }, { unique: true });
forgeEventSchema.index({ project: 1, createdAt: -1 });
forgeEventSchema.index({ turn: 1 });

export function forgeEventModel(connection: Connection) {
  return connection.model<ForgeEventDocument>("ForgeEvent", forgeEventSchema, "forge_events");
}
