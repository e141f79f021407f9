// Single-use drone registration tokens (15 minutes). Expiry is checked on use, not by a TTL
// index, which FerretDB v1 does not support. The token's hash is the _id (FerretDB v1 serves only
// `{_id}` lookups from an index).
import { type Connection, Schema, type Types } from "mongoose";

export interface RegistrationTokenDocument {
  /** Hex SHA-256 of the token (same as tokenHash). */
  _id: string;
  user: Types.ObjectId;
  /** Hex SHA-256 of the token. */
  tokenHash: string;
  expiresAt: Date;
  /** Set atomically when the token is exchanged for a drone credential. */
  usedAt: Date | null;
  /** The drone this token registered (the latest one, for a reusable token). */
  drone: Types.ObjectId | null;
  /** Registers any number of drones until it expires or is revoked (a fleet's autoscaler). */
  reusable: boolean;
  /** Labels every drone registered with it gets. */
  labels: string[];
  revokedAt: Date | null;
  createdAt: Date;
}

export const registrationTokenSchema = new Schema<RegistrationTokenDocument>(
  {
    _id: { type: String, required: true },
    user: { type: Schema.Types.ObjectId, required: true, ref: "User" },
    tokenHash: { type: String, required: true },
    expiresAt: { type: Date, required: true },
    usedAt: { type: Date, default: null },
    drone: { type: Schema.Types.ObjectId, default: null, ref: "Drone" },
    reusable: { type: Boolean, default: false },
    labels: { type: [String], default: [] },
    revokedAt: { type: Date, default: null },
    createdAt: { type: Date, required: true, default: () => new Date() },
  },
  { versionKey: false },
);
registrationTokenSchema.index({ user: 1, createdAt: -1 });

export function registrationTokenModel(connection: Connection) {
  return connection.model<RegistrationTokenDocument>(
    "RegistrationToken",
    registrationTokenSchema,
    "registration_tokens",
  );
}
