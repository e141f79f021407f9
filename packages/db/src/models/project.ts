// A git project of a user; drones clone it into a workspace named by its slug.
import { type Connection, Schema, type Types } from "mongoose";

export interface ProjectDocument {
  _id: Types.ObjectId;
  user: Types.ObjectId;
  name: string;
  /** Unique per user; names the drone's workspace directory. */
  slug: string;
  gitUrl: string;
  defaultBranch: string | null;
  verifyCommands: string[];
  createdAt: Date;
}

export const projectSchema = new Schema<ProjectDocument>(
  {
    user: { type: Schema.Types.ObjectId, required: true, ref: "User" },
    name: { type: String, required: true },
    slug: { type: String, required: true },
    gitUrl: { type: String, required: true },
    defaultBranch: { type: String, default: null },
    verifyCommands: { type: [String], default: [] },
    createdAt: { type: Date, required: true, default: () => new Date() },
  },
  { versionKey: false },
);
projectSchema.index({ user: 1, slug: 1 }, { unique: true });
projectSchema.index({ user: 1, createdAt: 1 });

export function projectModel(connection: Connection) {
  return connection.model<ProjectDocument>("Project", projectSchema, "projects");
}
