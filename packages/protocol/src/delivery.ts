// How a session's branch leaves the drone: the project's delivery setting, the commit author, the
// `delivery` a turn records, and the server→drone request that delivers a session now.
import { z } from "zod";
import { dateSchema, objectIdSchema } from "./common.ts";

/**
 * `workspace` (default): the branch stays on the drone; `branch`: the drone pushes it to `origin`
 * after every turn; `pull-request`: pushed as `branch` (opening the pull request comes later).
 */
export const deliveryModeSchema = z.enum(["workspace", "branch", "pull-request"]);
export type DeliveryMode = z.infer<typeof deliveryModeSchema>;

/** Who a turn's commit names as its author; unset: the drone machine's git identity. */
export const commitAuthorSchema = z.object({
  name: z.string().trim().min(1).max(200),
  email: z
    .string()
    .trim()
    .min(3)
    .max(320)
    .regex(/^[^\s<>]+@[^\s<>]+$/, "must be an email address"),
});
export type CommitAuthor = z.infer<typeof commitAuthorSchema>;

/** What a push of the session's branch did, as a turn records it (`ChatTurn.delivery`). */
export const turnDeliverySchema = z.object({
  branch: z.string(),
  /** The branch's commit when it was pushed (or the push was tried); null when it has none. */
  commit: z.string().nullable(),
  pushedAt: dateSchema.nullable(),
  pullRequestUrl: z.string().nullable(),
  /** Why the push failed, in words (never a credential); null when it went through. */
  error: z.string().nullable(),
});
export type TurnDelivery = z.infer<typeof turnDeliverySchema>;

/** `session_deliver`: commit the session worktree's uncommitted changes and push its branch. */
export const deliverRequestSchema = z.object({
  projectSlug: z.string().min(1),
  sessionId: objectIdSchema,
  /** The commit message for uncommitted changes (hand edits). */
  message: z.string().min(1),
  commitAuthor: commitAuthorSchema.optional(),
});
export type DeliverRequest = z.infer<typeof deliverRequestSchema>;

/** What the drone did: `commit` is the branch's head; `committed` when it made a commit now. */
export const deliverResultSchema = z.object({
  branch: z.string(),
  commit: z.string().nullable(),
  committed: z.boolean(),
  pushed: z.boolean(),
  /** Why the push failed, in words. */
  error: z.string().optional(),
});
export type DeliverResult = z.infer<typeof deliverResultSchema>;

/** `POST /api/sessions/:id/deliver` answers 202 with this: what the drone did, and the turn it recorded it on. */
export const sessionDeliveryAnswerSchema = deliverResultSchema.extend({
  /** The session's last turn, whose `delivery` now says this; null when the session has no turn. */
  turnId: z.string().nullable(),
});
export type SessionDeliveryAnswer = z.infer<typeof sessionDeliveryAnswerSchema>;

/** `session_worktree`: where the session's worktree stands on the drone holding it. */
export const sessionWorktreeRequestSchema = z.object({
  projectSlug: z.string().min(1),
  sessionId: objectIdSchema,
  /** The project's default branch, when set; else the remote's HEAD. */
  defaultBranch: z.string().min(1).max(255).optional(),
});
export type SessionWorktreeRequest = z.infer<typeof sessionWorktreeRequestSchema>;

/**
 * The session's branch against the default branch it started from (`base`, as last fetched):
 * `ahead` commits of its own, `behind` commits the default branch gained since; `dirty` when the
 * worktree holds uncommitted changes (hand edits, or a turn's failed commit).
 */
export const sessionWorktreeStateSchema = z.object({
  branch: z.string(),
  head: z.string().nullable(),
  base: z.string(),
  ahead: z.number().int().nonnegative(),
  behind: z.number().int().nonnegative(),
  dirty: z.boolean(),
});
export type SessionWorktreeState = z.infer<typeof sessionWorktreeStateSchema>;
