// A drone registered by a user on one of their machines, with its presence.
import { type Connection, Schema, type Types } from "mongoose";

export interface DroneDocument {
  _id: Types.ObjectId;
  user: Types.ObjectId;
  name: string;
  /** Hex SHA-256 of the long-lived credential. */
  credentialHash: string;
  hostname: string | null;
  platform: string | null;
  version: string | null;
  /** What confines its commands, as it said when it last connected (null before that). */
  sandbox: { kind: string; version: string | null; network: string } | null;
  capacity: number;
  /** Project slugs whose workspace the drone last reported holding. */
  workspaces: string[];
  /** When the drone last connected or disconnected (live presence is kept in Redis by the server). */
  lastSeenAt: Date | null;
  /**
   * The registration token this drone was created with; unique, which makes tokens single use (a
   * reusable token's drones add `/<their id>`).
   */
  registrationToken: string;
  /**
   * Turns this drone holds (dispatched, processing, awaiting approval): its used capacity. Kept on the
   * drone so dispatch reads it by _id; the server adds under a per-user lock and repairs drift.
   */
  activeTurns: Types.ObjectId[];
  /** The user's labels (`gpu`, `region=eu`), from registration or `PATCH /api/drones/:id`. */
  labels: string[];
  /** The labels the drone adds about itself (`os`, `arch`, `sandbox`), as of its last connection. */
  systemLabels: string[];
  /** Started with `--ephemeral`: one turn, then it is revoked. */
  ephemeral: boolean;
  /** The newer version it last refused to update to, why, and when (null: none). */
  updateRefused: { version: string; reason: string; at: Date } | null;
  /** Set by `DELETE /api/drones/:id`; a revoked drone never connects again. */
  revokedAt: Date | null;
  createdAt: Date;
}

export const droneSchema = new Schema<DroneDocument>(
  {
    user: { type: Schema.Types.ObjectId, required: true, ref: "User" },
    name: { type: String, required: true },
    credentialHash: { type: String, required: true },
    hostname: { type: String, default: null },
    platform: { type: String, default: null },
    version: { type: String, default: null },
    sandbox: {
      type: new Schema(
        { kind: String, version: { type: String, default: null }, network: String },
        { _id: false },
      ),
      default: null,
    },
    capacity: { type: Number, required: true, default: 1 },
    workspaces: { type: [String], default: [] },
    lastSeenAt: { type: Date, default: null },
    registrationToken: { type: String, required: true, ref: "RegistrationToken" },
    activeTurns: { type: [Schema.Types.ObjectId], default: [] },
    labels: { type: [String], default: [] },
    systemLabels: { type: [String], default: [] },
    ephemeral: { type: Boolean, default: false },
    updateRefused: {
      type: new Schema({ version: String, reason: String, at: Date }, { _id: false }),
      default: null,
    },
    revokedAt: { type: Date, default: null },
    createdAt: { type: Date, required: true, default: () => new Date() },
  },
  { versionKey: false },
);
// Listing a user's drones and picking one to dispatch to.
droneSchema.index({ user: 1, revokedAt: 1 });
// FerretDB v1 updates are not atomic, so a unique insert is what makes a registration token single use.
droneSchema.index({ registrationToken: 1 }, { unique: true });

export function droneModel(connection: Connection) {
  return connection.model<DroneDocument>("Drone", droneSchema, "drones");
}
