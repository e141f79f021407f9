// Typed Socket.IO event maps for the /drones and /ide namespaces, with a schema behind each payload.
import { z } from "zod";
import type { Drone } from "./api.ts";
import { fileContentSchema, fileEntrySchema } from "./api.ts";
import { turnMessageSchema } from "./chat.ts";
import { dateSchema, objectIdSchema } from "./common.ts";
import type { ApiErrorBody } from "./errors.ts";
import type { AgentEvent, TurnEvent } from "./events.ts";
import { agentEventSchema, envelopedEventSchema } from "./events.ts";
import type { ChatTurn } from "./turn.ts";
import type { IWorkOrder } from "./work-order.ts";

export const DRONES_NAMESPACE = "/drones";
export const IDE_NAMESPACE = "/ide";

/** Every acknowledgement is either a success with a payload or an API error body. */
export type Ack<T extends object = object> = ({ ok: true } & T) | ({ ok: false } & ApiErrorBody);

// ---------- /drones ----------

export const droneHandshakeSchema = z.object({
  droneId: objectIdSchema,
  credential: z.string().min(1),
  protocolVersion: z.number().int(),
  version: z.string().max(50).optional(),
  hostname: z.string().max(255).optional(),
  platform: z.string().max(100).optional(),
  capacity: z.number().int().min(1).max(64).optional(),
  /** Turns the drone is still running, so a reconnect keeps them (GitHub runner job lock renewal). */
  activeTurns: z.array(objectIdSchema).max(64).default([]),
  /** Project slugs whose workspace the drone holds, to prefer it for those projects. */
  workspaces: z.array(z.string()).max(1000).default([]),
});
export type DroneHandshake = z.infer<typeof droneHandshakeSchema>;

/** One event as the drone streams it: the drone numbers events per turn. */
const wireEnvelopeSchema = z.object({
  seq: z.number().int().positive(),
  at: dateSchema.optional(),
});
export const wireEventSchema = envelopedEventSchema(
  wireEnvelopeSchema.shape,
) as unknown as z.ZodType<
  z.output<typeof wireEnvelopeSchema> & AgentEvent,
  z.input<typeof wireEnvelopeSchema>
>;

export const turnEventBatchSchema = z.object({
  turnId: objectIdSchema,
  events: z.array(wireEventSchema).min(1).max(1000),
});
export type TurnEventBatch = z.infer<typeof turnEventBatchSchema>;
/** A batch as a drone writes it (`at` as an ISO string), before the server parses it. */
export type TurnEventBatchInput = z.input<typeof turnEventBatchSchema>;

/**
 * The turn's own messages (and the engine's saved state) so far, sent after each pass and when
 * pausing for approval, so the server can resume the turn on any drone (seed 001: nothing is lost).
 */
export const turnCheckpointSchema = z.object({
  turnId: objectIdSchema,
  messages: z.array(turnMessageSchema).max(100_000),
  state: z.unknown().optional(),
});
export type TurnCheckpoint = z.infer<typeof turnCheckpointSchema>;

export const heartbeatSchema = z.object({
  activeTurns: z.array(objectIdSchema).max(64),
  workspaces: z.array(z.string()).max(1000).optional(),
});
export type Heartbeat = z.infer<typeof heartbeatSchema>;

export const turnControlSchema = z.object({ turnId: objectIdSchema });
export type TurnControl = z.infer<typeof turnControlSchema>;

export const approvalDecisionSchema = z.object({
  turnId: objectIdSchema,
  approvalId: z.string().min(1),
  approve: z.boolean(),
  input: z.unknown().optional(),
});
export type ApprovalDecision = z.infer<typeof approvalDecisionSchema>;

export const fileRequestSchema = z.discriminatedUnion("op", [
  z.object({
    op: z.literal("list"),
    projectSlug: z.string(),
    gitUrl: z.string(),
    path: z.string(),
  }),
  z.object({
    op: z.literal("read"),
    projectSlug: z.string(),
    gitUrl: z.string(),
    path: z.string(),
  }),
  z.object({
    op: z.literal("write"),
    projectSlug: z.string(),
    gitUrl: z.string(),
    path: z.string().min(1),
    content: z.string(),
    baseSha: z.string().optional(),
  }),
]);
export type FileRequest = z.infer<typeof fileRequestSchema>;

export const fileResponseSchema = z.union([
  z.object({ entries: z.array(fileEntrySchema) }),
  fileContentSchema,
  z.object({ sha: z.string() }),
]);
export type FileResponse = z.infer<typeof fileResponseSchema>;

/** Events the server sends a drone. */
export interface DroneServerToClientEvents {
  work_order: (order: IWorkOrder, ack: (result: Ack) => void) => void;
  turn_cancel: (control: TurnControl, ack: (result: Ack) => void) => void;
  approval_decision: (decision: ApprovalDecision, ack: (result: Ack) => void) => void;
  file_request: (
    request: FileRequest,
    ack: (result: Ack<{ result: FileResponse }>) => void,
  ) => void;
  /** Sent right before the server disconnects a revoked drone. */
  revoked: (notice: { reason: string }) => void;
}

/** Events a drone sends the server. */
export interface DroneClientToServerEvents {
  turn_events: (
    batch: TurnEventBatchInput,
    ack: (result: Ack<{ lastSeq: number }>) => void,
  ) => void;
  turn_checkpoint: (checkpoint: TurnCheckpoint, ack: (result: Ack) => void) => void;
  heartbeat: (beat: Heartbeat, ack: (result: Ack<{ cancelledTurns: string[] }>) => void) => void;
}

// ---------- /ide ----------

export const ideHandshakeSchema = z.object({ token: z.string().min(1) });

export const subscribeSchema = z
  .object({
    turnId: objectIdSchema.optional(),
    sessionId: objectIdSchema.optional(),
    /** Receive only events with a larger seq (per turn); 0 replays everything. */
    after: z.number().int().nonnegative().default(0),
  })
  .refine((value) => Boolean(value.turnId) !== Boolean(value.sessionId), {
    message: "give exactly one of turnId or sessionId",
  });
export type Subscribe = z.infer<typeof subscribeSchema>;

/** One event of a turn, as a browser handles it. */
export interface TurnEventMessage {
  turnId: string;
  sessionId: string;
  event: TurnEvent;
}

/**
 * Events of one turn in seq order, as the server sends them: a stored batch or a catch-up page
 * at a time, one message where one per event would cost a packet and a frame each.
 */
export interface TurnEventsMessage {
  turnId: string;
  sessionId: string;
  events: TurnEvent[];
}

/** Events the server sends a browser or script on /ide. */
export interface IdeServerToClientEvents {
  turn_events: (message: TurnEventsMessage) => void;
  /** Turns of the user that changed, a few at a time (throttled; soon after a status change). */
  turn_updates: (message: { turns: ChatTurn[] }) => void;
  drone_update: (message: { drone: Drone }) => void;
}

/** Events a browser sends on /ide. */
export interface IdeClientToServerEvents {
  subscribe: (request: z.input<typeof subscribeSchema>, ack: (result: Ack) => void) => void;
  unsubscribe: (request: z.input<typeof subscribeSchema>, ack: (result: Ack) => void) => void;
}
