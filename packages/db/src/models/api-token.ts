// Opaque bearer tokens of users. Only the SHA-256 of a token is stored, and it is the _id:
// FerretDB v1 serves only `{_id}` lookups from an index, and every request looks its token up.
import { type Connection, Schema, type Types } from "mongoose";

export interface ApiTokenDocument {
  /** Hex SHA-256 of the token (same as tokenHash). */
  _id: string;
  user: Types.ObjectId;
  /** Hex SHA-256 of the token; the token itself is shown once and never stored. */
  tokenHash: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  /** The browser or program it was made with, in words ("Firefox on macOS"); null if unknown. */
  device: string | null;
}

export const apiTokenSchema = new Schema<ApiTokenDocument>(
  {
    _id: { type: String, required: true },
    user: { type: Schema.Types.ObjectId, required: true, ref: "User" },
    tokenHash: { type: String, required: true },
    createdAt: { type: Date, required: true, default: () => new Date() },
    lastUsedAt: { type: Date, default: null },
    device: { type: String, default: null },
  },
  { versionKey: false },
);
apiTokenSchema.index({ user: 1 });

export function apiTokenModel(connection: Connection) {
  return connection.model<ApiTokenDocument>("ApiToken", apiTokenSchema, "api_tokens");
}
