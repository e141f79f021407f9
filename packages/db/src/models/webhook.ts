// A user's webhook: a URL told about their turns. The signing secret is stored only encrypted
// (AES-256-GCM, like a provider's apiKey); the events it wants are filtered in code (a user has
// a few webhooks), so no index covers the array.
import type { WebhookEvent } from "@gadget/protocol";
import { type Connection, Schema, type Types } from "mongoose";

export interface WebhookDocument {
  _id: Types.ObjectId;
  user: Types.ObjectId;
  url: string;
  events: WebhookEvent[];
  /** `v1:` + base64(iv ‖ tag ‖ ciphertext); never returned, never logged. */
  secretEncrypted: string;
  createdAt: Date;
}

export const webhookSchema = new Schema<WebhookDocument>(
  {
    user: { type: Schema.Types.ObjectId, required: true, ref: "User" },
    url: { type: String, required: true },
    events: { type: [String], required: true },
    secretEncrypted: { type: String, required: true },
    createdAt: { type: Date, required: true, default: () => new Date() },
  },
  { versionKey: false },
);
webhookSchema.index({ user: 1, createdAt: 1 });

export function webhookModel(connection: Connection) {
  return connection.model<WebhookDocument>("Webhook", webhookSchema, "webhooks");
}
