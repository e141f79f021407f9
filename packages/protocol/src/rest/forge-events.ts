// Work that starts on the forge: the webhook the forge calls (signed, no bearer), the secret a
// project's webhook is set up with, and the deliveries received.
import { z } from "zod";
import {
  forgeEventAcceptedSchema,
  forgeEventDeliverySchema,
  forgeEventIgnoredSchema,
  forgeEventsSecretAnswerSchema,
} from "../forge-events.ts";
import { defineRoute, idParams, pathId } from "./route.ts";

export const forgeEventRoutes = {
  /**
   * The forge's webhook: proven by its signature over the raw body (401 when wrong), deduplicated
   * by its delivery id; 202 when acted on, 200 `{ignored}` otherwise. The body is read per event.
   */
  receive: defineRoute({
    method: "POST",
    path: "/api/forge-events/:projectId",
    caller: "anyone",
    params: z.object({ projectId: pathId("Project") }),
    body: z.unknown(),
    bodyLimit: 1024 * 1024,
    answers: { 200: forgeEventIgnoredSchema, 202: forgeEventAcceptedSchema },
  }),
  /** A new secret (the previous one stops working) and the URL to paste into the forge: shown once. */
  createSecret: defineRoute({
    method: "POST",
    path: "/api/projects/:id/forge-events/secret",
    caller: "user",
    params: idParams("Project"),
    answers: { 201: forgeEventsSecretAnswerSchema },
  }),
  /** The latest 50 deliveries, newest first, with what each did. */
  list: defineRoute({
    method: "GET",
    path: "/api/projects/:id/forge-events",
    caller: "user",
    params: idParams("Project"),
    answers: { 200: z.object({ deliveries: z.array(forgeEventDeliverySchema) }) },
  }),
};
