// Work that starts on the forge: a project's `forge.events` settings, the URL and secret a forge's
// webhook is set up with, and the deliveries received with what each did.
import { z } from "zod";
import { dateSchema } from "./common.ts";

/**
 * What starts work: an issue labelled `label` or assigned to `assignee`, a comment with `trigger`;
 * on a session's pull request, a comment or review comment with `trigger` (`reviewFollowUps`).
 * `checkFollowUps`: a failed check on a session's pull request follows up (GitHub's check runs,
 * Gitea's failing commit statuses).
 */
export const forgeEventsSettingsSchema = z
  .object({
    enabled: z.boolean(),
    trigger: z
      .string()
      .trim()
      .min(2)
      .max(50)
      .regex(/^\S+$/, "must be one word, such as @gadget")
      .default("@gadget"),
    label: z.string().trim().min(1).max(100).default("gadget"),
    assignee: z.string().trim().min(1).max(100).nullable().optional(),
    reviewFollowUps: z.boolean().default(true),
    checkFollowUps: z.boolean().default(false),
  })
  .strict();
export type ForgeEventsSettings = z.output<typeof forgeEventsSettingsSchema>;

/** `POST /api/projects/:id/forge-events/secret`: what to paste into the forge's webhook settings (the secret shown once). */
export const forgeEventsSecretAnswerSchema = z.object({ url: z.string(), secret: z.string() });
export type ForgeEventsSecretAnswer = z.infer<typeof forgeEventsSecretAnswerSchema>;

/** What a delivery did: started a turn, followed up in a session, was ignored, or refused. */
export const forgeEventOutcomeSchema = z.enum(["started", "followed_up", "ignored", "refused"]);
export type ForgeEventOutcome = z.infer<typeof forgeEventOutcomeSchema>;

/** One delivery from the forge as `GET /api/projects/:id/forge-events` lists it. */
export const forgeEventDeliverySchema = z.object({
  _id: z.string(),
  /** The forge's delivery id (its header); null when it sent none. */
  deliveryId: z.string().nullable(),
  /** The forge's event name (`issues`, `issue_comment`, `Note Hook`, …) and its action. */
  event: z.string(),
  action: z.string().nullable(),
  sender: z.string().nullable(),
  /** The issue or pull request it was about. */
  number: z.number().int().nullable(),
  outcome: forgeEventOutcomeSchema,
  /** Why, in words. */
  reason: z.string(),
  sessionId: z.string().nullable(),
  turnId: z.string().nullable(),
  createdAt: dateSchema,
});
export type ForgeEventDelivery = z.infer<typeof forgeEventDeliverySchema>;

/** `POST /api/forge-events/:projectId` answers 202 with this when it acted on the delivery. */
export const forgeEventAcceptedSchema = z.object({
  outcome: z.enum(["started", "followed_up"]),
  sessionId: z.string(),
  turnId: z.string(),
});
/** …and 200 with this when it did not (the reason is recorded too). */
export const forgeEventIgnoredSchema = z.object({ ignored: z.string() });
