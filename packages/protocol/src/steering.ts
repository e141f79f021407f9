// Talking to a turn after it was posted: editing a queued turn's prompt, steering messages sent to
// a running turn, and taking turns back (rewind) or branching a session off (fork).
import { z } from "zod";
import { dateSchema, objectIdSchema } from "./common.ts";
import { pullRequestDeliverySchema } from "./delivery.ts";

/** PATCH /api/turns/:id: a queued turn's new prompt. */
export const editTurnBodySchema = z.object({
  prompt: z.string().trim().min(1).max(100_000),
});
export type EditTurnBody = z.infer<typeof editTurnBodySchema>;

/** POST /api/turns/:id/messages. */
export const postTurnMessageBodySchema = z.object({
  text: z.string().trim().min(1).max(100_000),
  /** Stop the model call or commands in flight and take the message at once. */
  interrupt: z.boolean().optional(),
});
export type PostTurnMessageBody = z.infer<typeof postTurnMessageBodySchema>;

export const steeringMessageStatusSchema = z.enum(["pending", "delivered", "queued_as_turn"]);
export type SteeringMessageStatus = z.infer<typeof steeringMessageStatusSchema>;

/** A steering message as the server returns it. */
export const steeringMessageSchema = z.object({
  _id: z.string(),
  text: z.string(),
  interrupt: z.boolean().optional(),
  status: steeringMessageStatusSchema,
  /** The turn it became (`queued_as_turn`). */
  turn: z.string().optional(),
  createdAt: dateSchema.optional(),
});
export type SteeringMessage = z.infer<typeof steeringMessageSchema>;

/** POST /api/sessions/:id/rewind: the turn to go back to (it and every later turn are taken back). */
export const rewindBodySchema = z.object({
  turnId: objectIdSchema,
  /** Put the session's branch and worktree back as they were before `turnId`. */
  code: z.boolean().optional(),
  /** Leave the turns out of later turns' context (the default when neither is given). */
  conversation: z.boolean().optional(),
});
export type RewindBody = z.infer<typeof rewindBodySchema>;

/** POST /api/sessions/:id/fork. */
export const forkBodySchema = z.object({
  turnId: objectIdSchema,
  name: z.string().trim().min(1).max(200).optional(),
});
export type ForkBody = z.infer<typeof forkBodySchema>;

/**
 * Drone request: put the session's branch and worktree back as they were before the first of
 * `turnIds` that committed, keeping the previous head and uncommitted changes under a backup ref.
 */
export const sessionRewindRequestSchema = z.object({
  sessionId: objectIdSchema,
  projectSlug: z.string().min(1),
  /** The rewound turns, oldest first (their commits carry a `Gadget-Turn: <id>` trailer). */
  turnIds: z.array(objectIdSchema).min(1),
  /** The project delivers: move `origin`'s branch back too, with `--force-with-lease`. */
  deliver: z.boolean().default(false),
  /** With `deliver`, the session's open pull request: its body updated to the turns kept. */
  pullRequest: pullRequestDeliverySchema.optional(),
});
export type SessionRewindRequest = z.input<typeof sessionRewindRequestSchema>;

export const sessionRewindResultSchema = z.object({
  /** The branch's head before, and after the rewind. */
  previousHead: z.string(),
  head: z.string(),
  /** `refs/gadget/rewound/<session id>/<n>`: the previous head, with any uncommitted change. */
  backupRef: z.string(),
  /** With `deliver`: whether `origin`'s branch was moved back, or why not (e.g. it moved since). */
  pushed: z.boolean().optional(),
  pushError: z.string().optional(),
  /** Why the pull request's body could not be updated after the branch moved back. */
  pullRequestError: z.string().optional(),
});
export type SessionRewindResult = z.infer<typeof sessionRewindResultSchema>;
