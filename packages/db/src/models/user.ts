// A person with an account: logs in with email and password, owns everything else.
import { type Connection, Schema, type Types } from "mongoose";

export interface UserDocument {
  _id: Types.ObjectId;
  /** Lowercased; unique. */
  email: string;
  name: string;
  /** `scrypt$N$r$p$salt$hash`, see the server's auth/passwords.ts. */
  passwordHash: string;
  createdAt: Date;
}

export const userSchema = new Schema<UserDocument>(
  {
    email: { type: String, required: true },
    name: { type: String, required: true },
    passwordHash: { type: String, required: true },
    createdAt: { type: Date, required: true, default: () => new Date() },
  },
  { versionKey: false },
);
// Login and signup look users up by email.
userSchema.index({ email: 1 }, { unique: true });

export function userModel(connection: Connection) {
  return connection.model<UserDocument>("User", userSchema, "users");
}
