// The user's turns across projects (GET /api/turns, the Activity page) and the live notices of
// what each running turn is doing, sent on a user's activity subscription on /ide.
import { z } from "zod";
import { dateSchema, objectIdSchema } from "./common.ts";
import { chatTurnSchema, type TurnStatus, turnStatusSchema } from "./turn.ts";

/**
 * A page cursor of the activity list: the last turn's creation time (ms) and id. Turns are
 * listed newest first by (createdAt, _id), so a page goes on after the same turn however many
 * were created meanwhile.
 */
export const activityCursorSchema = z
  .string()
  .regex(/^\d{1,15}_[0-9a-f]{24}$/i, "must be a nextCursor of an earlier page");

/** The cursor after `turn`. */
export function activityCursor(turn: { createdAt: Date; _id: unknown }): string {
  return `${turn.createdAt.getTime()}_${String(turn._id)}`;
}

/** The time and id a cursor names. */
export function parseActivityCursor(cursor: string): { createdAt: Date; id: string } {
  const [time, id] = cursor.split("_") as [string, string];
  return { createdAt: new Date(Number(time)), id: id.toLowerCase() };
}

/** `?status=processing,awaiting_approval`: one status or several, comma-separated. */
const statusListSchema = z
  .string()
  .max(200)
  .transform((value) => value.split(",").map((part) => part.trim()))
  .pipe(z.array(turnStatusSchema).min(1).max(8));

/** `GET /api/turns?status=&project=&drone=&cursor=&limit=`. */
export const turnListQuerySchema = z.object({
  status: statusListSchema.optional(),
  project: objectIdSchema.optional(),
  drone: objectIdSchema.optional(),
  cursor: activityCursorSchema.optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});
export type TurnListQuery = z.infer<typeof turnListQuerySchema>;

/** An approval a turn waits on, enough to decide it from a list. */
export const activityApprovalSchema = z.object({
  id: z.string(),
  tool: z.string(),
  description: z.string(),
});
export type ActivityApproval = z.infer<typeof activityApprovalSchema>;

/** The tool a running turn is in. */
export const activityToolSchema = z.object({
  name: z.string(),
  callId: z.string(),
  startedAt: dateSchema,
});
export type ActivityTool = z.infer<typeof activityToolSchema>;

/**
 * What a turn is doing now, from its latest events. In a notice, a field that is absent did not
 * change; `tool: null` means the last tool finished, `approvals: []` that none is pending.
 */
export const turnActivitySchema = z.object({
  turnId: z.string(),
  sessionId: z.string(),
  /** The last event this accounts for. */
  seq: z.number().int(),
  at: dateSchema,
  pass: z.number().int().optional(),
  model: z.string().optional(),
  tool: activityToolSchema.nullable().optional(),
  approvals: z.array(activityApprovalSchema).optional(),
  droneName: z.string().optional(),
  /** The turn's drone is offline: interrupted at `until` unless it comes back; null once back. */
  droneOffline: z.object({ since: dateSchema, until: dateSchema }).nullable().optional(),
});
export type TurnActivity = z.infer<typeof turnActivitySchema>;

/** A turn as the activity list shows it: the turn without its answer, with the names around it. */
export const activityTurnSchema = chatTurnSchema.omit({ response: true }).extend({
  project: z.string(),
  projectName: z.string(),
  sessionName: z.string(),
  droneName: z.string().nullable(),
  /** For a queued turn: why it waits, in words. */
  queuedReason: z.string().optional(),
  /** For a turn a drone holds: what it does now (from its latest events). */
  activity: turnActivitySchema.omit({ turnId: true, sessionId: true }).optional(),
});
export type ActivityTurn = z.infer<typeof activityTurnSchema>;

/** The answer of `GET /api/turns`. */
export const turnListAnswerSchema = z.object({
  turns: z.array(activityTurnSchema),
  nextCursor: z.string().nullable(),
});
export type TurnListAnswer = z.infer<typeof turnListAnswerSchema>;

/** `GET /api/turns/summary`: the user's turns by what they need now. */
export const turnSummarySchema = z.object({
  /** Dispatched or processing. */
  running: z.number().int(),
  awaitingApproval: z.number().int(),
  queued: z.number().int(),
});
export type TurnSummary = z.infer<typeof turnSummarySchema>;

/** Which summary count a status falls in (final statuses count in none). */
export function summaryKeyOf(status: TurnStatus): keyof TurnSummary | null {
  switch (status) {
    case "dispatched":
    case "processing":
      return "running";
    case "awaiting_approval":
      return "awaitingApproval";
    case "queued":
      return "queued";
    default:
      return null;
  }
}
