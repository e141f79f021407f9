// Webhooks: a user's URL told when their turns finish, fail or wait for them. A delivery is a
// signed JSON POST; its body is `webhookPayloadSchema`, its signature an HMAC of the raw body.
import { z } from "zod";
import { dateSchema } from "./common.ts";
import { turnStatusSchema } from "./turn.ts";

/** The turn states a webhook can be told about. */
export const webhookEventSchema = z.enum([
  "turn.completed",
  "turn.failed",
  "turn.cancelled",
  "turn.interrupted",
  "turn.awaiting_approval",
]);
export type WebhookEvent = z.infer<typeof webhookEventSchema>;
export const webhookEvents = webhookEventSchema.options;

/** What `POST /api/webhooks/:id/test` sends: no turn, only proof the URL and secret work. */
export const webhookPingEvent = "ping";

/**
 * A webhook's URL: http(s), no user name or password, at most 2 KiB. Where it may point (no
 * private addresses by default) is the server's outbound policy, checked when sending.
 */
export const webhookUrlSchema = z
  .url({ protocol: /^https?$/, error: "must be an http or https URL" })
  .max(2048)
  .refine((value) => {
    const url = new URL(value);
    return !url.username && !url.password;
  }, "a webhook URL has no user name or password");

/** `POST /api/webhooks`. */
export const createWebhookBodySchema = z.object({
  url: webhookUrlSchema,
  events: z
    .array(webhookEventSchema)
    .min(1, "choose at least one event")
    .max(webhookEvents.length)
    .refine((events) => new Set(events).size === events.length, "an event is named twice"),
});
export type CreateWebhookBody = z.infer<typeof createWebhookBodySchema>;

/** A webhook as returned: never with its secret. */
export const webhookSchema = z.object({
  _id: z.string(),
  url: z.string(),
  events: z.array(webhookEventSchema),
  createdAt: dateSchema,
});
export type Webhook = z.infer<typeof webhookSchema>;

/** `POST /api/webhooks` answers the secret once; it signs every delivery. */
export const createWebhookResponseSchema = z.object({ webhook: webhookSchema, secret: z.string() });
export type CreateWebhookResponse = z.infer<typeof createWebhookResponseSchema>;

export const webhookDeliveryStatusSchema = z.enum(["pending", "delivered", "failed"]);
export type WebhookDeliveryStatus = z.infer<typeof webhookDeliveryStatusSchema>;

/** One delivery as listed by `GET /api/webhooks/:id/deliveries`, newest first. */
export const webhookDeliverySchema = z.object({
  /** Also the `X-Gadget-Delivery` header: the same on every attempt of one delivery. */
  _id: z.string(),
  webhook: z.string(),
  event: z.union([webhookEventSchema, z.literal(webhookPingEvent)]),
  turn: z.string().nullable(),
  status: webhookDeliveryStatusSchema,
  attempts: z.number().int(),
  lastStatusCode: z.number().int().nullable(),
  lastError: z.string().nullable(),
  createdAt: dateSchema,
  lastAttemptAt: dateSchema.nullable(),
  deliveredAt: dateSchema.nullable(),
});
export type WebhookDelivery = z.infer<typeof webhookDeliverySchema>;

/** The body of a delivery (the receiver's view; it checks the signature over the raw bytes). */
export const webhookPayloadSchema = z.object({
  event: z.union([webhookEventSchema, z.literal(webhookPingEvent)]),
  turn: z
    .object({
      _id: z.string(),
      status: turnStatusSchema,
      /** The prompt's first line, at most 200 characters. */
      prompt: z.string(),
      error: z.object({ code: z.string(), message: z.string() }).nullable(),
      cost: z.number(),
      createdAt: dateSchema,
      startedAt: dateSchema.nullable(),
      finishedAt: dateSchema.nullable(),
    })
    .nullable(),
  session: z.object({ _id: z.string(), name: z.string() }).nullable(),
  project: z.object({ _id: z.string(), name: z.string() }).nullable(),
  /** The session in the web IDE. */
  link: z.string().nullable(),
});
export type WebhookPayload = z.infer<typeof webhookPayloadSchema>;
