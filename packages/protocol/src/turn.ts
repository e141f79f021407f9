// The ChatTurn of seed 001 as the server stores and returns it.
import { z } from "zod";
import { dateSchema, turnLimitsSchema, turnModeSchema } from "./common.ts";
import { exitReasonSchema, fileChangeSchema } from "./events.ts";

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
});
export type TurnStats = z.infer<typeof turnStatsSchema>;

/** A fresh turn's stats, as seed 001 initialises them. */
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

export const chatTurnSchema = z.object({
  _id: z.string(),
  session: z.string(),
  user: z.string(),
  drone: z.string().nullable(),
  provider: z.string(),
  llm: z.string(),
  mode: turnModeSchema,
  prompt: z.string(),
  status: turnStatusSchema,
  response: z.string().nullable(),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
  exitReason: exitReasonSchema.nullable(),
  limits: turnLimitsSchema.optional(),
  stats: turnStatsSchema,
  changes: z.array(fileChangeSchema),
  lastSeq: z.number().int().nonnegative().optional(),
  createdAt: dateSchema,
  startedAt: dateSchema.nullable(),
  finishedAt: dateSchema.nullable(),
});
export type ChatTurn = z.infer<typeof chatTurnSchema>;

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
