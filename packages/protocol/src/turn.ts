// The ChatTurn (docs/reference.md) as the server stores and returns it.
import { z } from "zod";
import { dateSchema, turnLimitsSchema, turnModeSchema } from "./common.ts";
import { turnDeliverySchema } from "./delivery.ts";
import { exitReasonSchema, fileChangeSchema } from "./events.ts";
import { turnImageSchema } from "./images.ts";

/** `queued` → `dispatched` → `processing` ⇄ `awaiting_approval` → a final status. */
export const turnStatusSchema = z.enum([
  "queued",
  "dispatched",
  "processing",
  "awaiting_approval",
  "completed",
  "failed",
  "cancelled",
  "interrupted",
]);
export type TurnStatus = z.infer<typeof turnStatusSchema>;

export const finalTurnStatuses: readonly TurnStatus[] = [
  "completed",
  "failed",
  "cancelled",
  "interrupted",
];

/** Whether a turn in `status` will change no more (unless resumed). */
export function isFinalTurnStatus(status: TurnStatus): boolean {
  return finalTurnStatuses.includes(status);
}

export const turnStatsSchema = z.object({
  toolCallCount: z.number().int().nonnegative(),
  inputTokens: z.number().int().nonnegative(),
  thinkingTokenCount: z.number().int().nonnegative(),
  responseTokens: z.number().int().nonnegative(),
  durationMs: z.number().nonnegative(),
  durationLabel: z.string(),
  passes: z.number().int().nonnegative(),
  cost: z.number().nonnegative(),
  /** False when the turn's provider has no prices (its cost is unknown); absent when not reported. */
  priced: z.boolean().optional(),
});
export type TurnStats = z.infer<typeof turnStatsSchema>;

/** A fresh turn's stats. */
export function emptyTurnStats(): TurnStats {
  return {
    toolCallCount: 0,
    inputTokens: 0,
    thinkingTokenCount: 0,
    responseTokens: 0,
    durationMs: 0,
    durationLabel: "pending",
    passes: 0,
    cost: 0,
  };
}

/**
 * What a turn waits on: an outage of the database or Redis (`on` names it too), its drone's
 * connection (`drone_offline`: interrupted at `until` unless the drone comes back), or a
 * provider's rate limit (`provider_rate_limit`: the drone calls again at `until`).
 */
export const turnWaitingSchema = z.object({
  reason: z.enum(["database", "redis", "drone_offline", "provider_rate_limit"]),
  on: z.enum(["database", "redis"]).optional(),
  since: dateSchema,
  until: dateSchema.optional(),
});
export type TurnWaiting = z.infer<typeof turnWaitingSchema>;

/** A queued turn waiting for the turns of its session posted before it (1: it starts next). */
export const sessionBusyWaitingSchema = z.object({
  reason: z.literal("session_busy"),
  position: z.number().int().positive(),
});
export type SessionBusyWaiting = z.infer<typeof sessionBusyWaitingSchema>;

/** A turn paused at a limit it was given (`limits.onReach: "ask"`), waiting for the user. */
export const budgetWaitingSchema = z.object({
  reason: z.literal("budget"),
  limit: z.string(),
  used: z.number(),
});

export const chatTurnSchema = z.object({
  _id: z.string(),
  session: z.string(),
  user: z.string(),
  drone: z.string().nullable(),
  provider: z.string(),
  llm: z.string(),
  mode: turnModeSchema,
  prompt: z.string(),
  /** Images sent with the prompt (their bytes: `GET /api/turns/:id/images/:imageId`). */
  images: z.array(turnImageSchema).optional(),
  status: turnStatusSchema,
  response: z.string().nullable(),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
  exitReason: exitReasonSchema.nullable(),
  limits: turnLimitsSchema.optional(),
  /** Labels its drone must have (the turn's own; the project's `requires` apply too). */
  requires: z.array(z.string()).optional(),
  stats: turnStatsSchema,
  changes: z.array(fileChangeSchema),
  /** The session's branch the turn worked on, once it committed (null before, or for older turns). */
  branch: z.string().nullable().optional(),
  /** The turn's commit on that branch; null when it changed nothing or the commit failed. */
  commit: z.string().nullable().optional(),
  /** The session's branch as this turn delivered it (project delivery `branch`); null otherwise. */
  delivery: turnDeliverySchema.nullable().optional(),
  lastSeq: z.number().int().nonnegative().optional(),
  createdAt: dateSchema,
  startedAt: dateSchema.nullable(),
  finishedAt: dateSchema.nullable(),
  /** When the turn's changes were undone by a revert commit (POST /api/turns/:id/revert). */
  revertedAt: dateSchema.nullable().optional(),
  /** The revert commit on the session's branch. */
  revertCommit: z.string().nullable().optional(),
  /**
   * Set while the turn's events cannot be stored because the database or Redis is unavailable:
   * the drone keeps them and sends them again; nothing is lost. Or, for a queued turn, its place
   * behind the session's unfinished turns.
   */
  waiting: z
    .union([turnWaitingSchema, sessionBusyWaitingSchema, budgetWaitingSchema])
    .nullable()
    .optional(),
  /** When a rewind took the turn back: still readable, left out of later turns' context. */
  rewoundAt: dateSchema.nullable().optional(),
});
export type ChatTurn = z.infer<typeof chatTurnSchema>;

/**
 * The answer to POST /api/turns/:id/revert: the revert commit (null when the turn's changes were
 * never committed and were put back from its snapshot) and the files it put back, or
 * `revert: null` with a `message` when the turn changed nothing.
 */
export const turnRevertAnswerSchema = z.object({
  /** `pushed`/`pushError` only when the project delivers: the revert commit pushed, or why not. */
  revert: z
    .object({
      commit: z.string().nullable(),
      files: z.array(z.string()),
      pushed: z.boolean().optional(),
      pushError: z.string().optional(),
    })
    .nullable(),
  message: z.string().optional(),
  turn: chatTurnSchema,
});
export type TurnRevertAnswer = z.infer<typeof turnRevertAnswerSchema>;

/** "1m 05s"-style label for a duration, used for `stats.durationLabel`. */
export function formatDuration(durationMs: number): string {
  const totalSeconds = Math.round(durationMs / 1000);
  if (totalSeconds < 60) return `${totalSeconds}s`;
  const minutes = Math.floor(totalSeconds / 60);
  const seconds = totalSeconds % 60;
  if (minutes < 60) return `${minutes}m ${String(seconds).padStart(2, "0")}s`;
  const hours = Math.floor(minutes / 60);
  return `${hours}h ${String(minutes % 60).padStart(2, "0")}m`;
}
