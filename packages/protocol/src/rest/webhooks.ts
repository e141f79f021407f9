// A user's webhooks: created with a secret shown once, listed without it, removed, tested, and
// their recent deliveries.
import { z } from "zod";
import { pageQuerySchema } from "../api.ts";
import {
  createWebhookBodySchema,
  createWebhookResponseSchema,
  webhookDeliverySchema,
  webhookSchema,
} from "../webhooks.ts";
import { defineRoute, idParams, listAnswer, noContent } from "./route.ts";

const webhookParams = idParams("Webhook");
const deliveryAnswer = z.object({ delivery: webhookDeliverySchema });

export const webhookRoutes = {
  /** The answer holds the signing secret: shown once, never again. */
  create: defineRoute({
    method: "POST",
    path: "/api/webhooks",
    caller: "user",
    body: createWebhookBodySchema,
    subject: "webhook",
    bodyLimit: 16 * 1024,
    answers: { 201: createWebhookResponseSchema },
  }),
  list: defineRoute({
    method: "GET",
    path: "/api/webhooks",
    caller: "user",
    query: pageQuerySchema,
    answers: { 200: listAnswer("webhooks", webhookSchema) },
  }),
  remove: defineRoute({
    method: "DELETE",
    path: "/api/webhooks/:id",
    caller: "user",
    params: webhookParams,
    answers: { 204: noContent },
  }),
  /** The latest 50, newest first, with how each went. */
  deliveries: defineRoute({
    method: "GET",
    path: "/api/webhooks/:id/deliveries",
    caller: "user",
    params: webhookParams,
    answers: { 200: z.object({ deliveries: z.array(webhookDeliverySchema) }) },
  }),
  /** Sends a `ping` now (30 a minute per user). */
  test: defineRoute({
    method: "POST",
    path: "/api/webhooks/:id/test",
    caller: "user",
    params: webhookParams,
    answers: { 202: deliveryAnswer },
  }),
};
