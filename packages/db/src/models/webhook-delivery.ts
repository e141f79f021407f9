// One webhook delivery and how its attempts went. The _id is derived from the webhook, the turn,
// the event and the turn's event seq at that moment, so every server that sees the same change
// names the same delivery (and its BullMQ job). The body is stored as sent: every attempt sends
// the same bytes under the same signature.
import type { WebhookDeliveryStatus } from "@gadget/protocol";
import { type Connection, Schema, type Types } from "mongoose";

export interface WebhookDeliveryDocument {
  /** `whd_` + hex; also the `X-Gadget-Delivery` header. */
  _id: string;
  webhook: Types.ObjectId;
  user: Types.ObjectId;
  /** A webhook event, or `ping` for a test. */
  event: string;
  turn: Types.ObjectId | null;
  /** The exact JSON body sent (and signed). */
  body: string;
  status: WebhookDeliveryStatus;
  attempts: number;
  lastStatusCode: number | null;
  lastError: string | null;
  createdAt: Date;
  lastAttemptAt: Date | null;
  deliveredAt: Date | null;
}

export const webhookDeliverySchema = new Schema<WebhookDeliveryDocument>(
  {
    _id: { type: String, required: true },
    webhook: { type: Schema.Types.ObjectId, required: true, ref: "Webhook" },
    user: { type: Schema.Types.ObjectId, required: true, ref: "User" },
    event: { type: String, required: true },
    turn: { type: Schema.Types.ObjectId, default: null, ref: "ChatTurn" },
    body: { type: String, required: true },
    status: { type: String, required: true, default: "pending" },
    attempts: { type: Number, default: 0 },
    lastStatusCode: { type: Number, default: null },
    lastError: { type: String, default: null },
    createdAt: { type: Date, required: true, default: () => new Date() },
    lastAttemptAt: { type: Date, default: null },
    deliveredAt: { type: Date, default: null },
  },
  { versionKey: false },
);
webhookDeliverySchema.index({ webhook: 1, createdAt: -1 });
// The deliveries a server queues again at start and when Redis comes back (Webhooks.requeuePending).
webhookDeliverySchema.index({ status: 1, createdAt: 1 });

export function webhookDeliveryModel(connection: Connection) {
  return connection.model<WebhookDeliveryDocument>(
    "WebhookDelivery",
    webhookDeliverySchema,
    "webhook_deliveries",
  );
}
