// One-time signup invitations (GADGET_SIGNUP=invite): made by an admin with the CLI, used once.
// The code's hash is the _id; expiry is checked on use (FerretDB v1 has no TTL indexes).
import { type Connection, Schema } from "mongoose";

export interface InviteDocument {
  /** Hex SHA-256 of the invite code. */
  _id: string;
  expiresAt: Date;
  /** Set when an account is made with it. */
  usedAt: Date | null;
  createdAt: Date;
}

export const inviteSchema = new Schema<InviteDocument>(
  {
    _id: { type: String, required: true },
    expiresAt: { type: Date, required: true },
    usedAt: { type: Date, default: null },
    createdAt: { type: Date, required: true, default: () => new Date() },
  },
  { versionKey: false },
);

export function inviteModel(connection: Connection) {
  return connection.model<InviteDocument>("Invite", inviteSchema, "invites");
}
