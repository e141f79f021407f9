// Typed Socket.IO event maps for the /drones and /ide namespaces, with a schema behind each payload.
import { z } from "zod";
import type { TurnActivity } from "./activity.ts";
import type { Drone } from "./api.ts";
import { type droneUpdateRefusalSchema, fileContentSchema, fileEntrySchema } from "./api.ts";
import type { ProviderCheckRequest, ProviderCheckResult } from "./api-providers.ts";
import { turnMessageSchema } from "./chat.ts";
import type { ProjectCommandsAnswer, ProjectCommandsRequest } from "./commands.ts";
import { dateSchema, objectIdSchema, sandboxInfoSchema } from "./common.ts";
import type {
  DeliverRequest,
  DeliverResult,
  SessionWorktreeRequest,
  SessionWorktreeState,
} from "./delivery.ts";
import type { ApiErrorBody } from "./errors.ts";
import type { AgentEvent, TurnEvent } from "./events.ts";
import { envelopedEventSchema } from "./events.ts";
import { droneLabelsSchema } from "./labels.ts";
import type {
  GitRemoteCheckRequest,
  GitRemoteCheckResult,
  ProjectCloneRequest,
  ProjectCloneResult,
} from "./manage.ts";
import type { SessionRewindRequest, SessionRewindResult } from "./steering.ts";
import { storableIssue } from "./storable.ts";
import type { ChatTurn, TurnWaiting } from "./turn.ts";
import type { IWorkOrder } from "./work-order.ts";

export const DRONES_NAMESPACE = "/drones";
export const IDE_NAMESPACE = "/ide";
/**
 * Drones connect on their own Socket.IO path: it takes large messages (checkpoints, file
 * contents) but only from a drone whose credential the HTTP upgrade already carried. Browsers use
 * Socket.IO's default path, with a small message limit.
 */
export const DRONE_SOCKET_PATH = "/drone-socket/";

/**
 * The `Authorization` a drone sends on REST calls and on the HTTP request opening its socket.
 * @example io(url, { path: DRONE_SOCKET_PATH, extraHeaders: { authorization: droneAuthorization(id, credential) } });
 */
export function droneAuthorization(droneId: string, credential: string): string {
  return `Drone ${droneId}:${credential}`;
}

/** Every acknowledgement is either a success with a payload or an API error body. */
export type Ack<T extends object = object> = ({ ok: true } & T) | ({ ok: false } & ApiErrorBody);

// ---------- /drones ----------

export const droneHandshakeSchema = z.object({
  droneId: objectIdSchema,
  credential: z.string().min(1).max(200),
  protocolVersion: z.number().int(),
  version: z.string().max(50).optional(),
  hostname: z.string().max(255).optional(),
  platform: z.string().max(100).optional(),
  capacity: z.number().int().min(1).max(64).optional(),
  /** What confines the drone's commands; `kind: "none"` for a drone started with --no-sandbox. */
  sandbox: sandboxInfoSchema,
  /** Turns the drone is still running, so a reconnect keeps them (GitHub runner job lock renewal). */
  activeTurns: z.array(objectIdSchema).max(64).default([]),
  /**
   * Turns an earlier run of the drone left unfinished in its journal (it restarted): the server
   * gives each back to it, even after the grace, when the turn may carry on by itself.
   */
  journaledTurns: z.array(objectIdSchema).max(64).default([]),
  /** Project slugs whose workspace the drone holds, to prefer it for those projects. */
  workspaces: z.array(z.string()).max(1000).default([]),
  /** The labels the drone adds about itself (`os`, `arch`, `sandbox`), as of this start. */
  labels: droneLabelsSchema.default([]),
  /** `start --ephemeral`: takes one turn, sees it through and exits; unregistered after. */
  ephemeral: z.boolean().default(false),
  /** Stopping: it finishes its running turns and takes no new one. */
  draining: z.boolean().default(false),
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

/** Adds an issue for the first part of `value` (at `path`) the database could not store. */
function refineStorable(
  value: unknown,
  path: Array<string | number>,
  context: z.RefinementCtx,
  options: { maxStringLength?: number } = {},
) {
  const issue = storableIssue(value, options);
  if (issue) {
    context.addIssue({
      code: "custom",
      path: [...path, ...issue.path],
      message: `cannot be stored: ${issue.message}`,
    });
  }
}

export const turnEventBatchSchema = z
  .object({
    turnId: objectIdSchema,
    events: z.array(wireEventSchema).min(1).max(1000),
  })
  .superRefine((batch, context) => {
    // Free-form data (a tool's params, debug details) must be storable: one bad batch is refused
    // on its own instead of failing the database write it would share with others.
    batch.events.forEach((event, index) => {
      refineStorable((event as { data?: unknown }).data, ["events", index, "data"], context);
    });
  });
export type TurnEventBatch = z.infer<typeof turnEventBatchSchema>;
/** A batch as a drone writes it (`at` as an ISO string), before the server parses it. */
export type TurnEventBatchInput = z.input<typeof turnEventBatchSchema>;

/**
 * The turn's own messages (and the engine's saved state) so far, sent after each pass and when
 * pausing for approval, so the server can resume the turn on any drone (nothing a turn did is lost).
 */
export const turnCheckpointSchema = z
  .object({
    turnId: objectIdSchema,
    messages: z.array(turnMessageSchema).max(100_000),
    state: z.unknown().optional(),
  })
  .superRefine((checkpoint, context) => {
    // Messages have fixed fields of text; the engine's state is free-form (its size is the
    // socket's message limit, not a string cap).
    refineStorable(checkpoint.state, ["state"], context, {
      maxStringLength: Number.POSITIVE_INFINITY,
    });
  });
export type TurnCheckpoint = z.infer<typeof turnCheckpointSchema>;

export const heartbeatSchema = z.object({
  activeTurns: z.array(objectIdSchema).max(64),
  workspaces: z.array(z.string()).max(1000).optional(),
  /** The drone is stopping (draining): no new turn for it. */
  draining: z.boolean().optional(),
});
export type Heartbeat = z.infer<typeof heartbeatSchema>;

/**
 * How a drone renumbers a turn's unsent events after the turn waited for it (`drone_lost`,
 * `drone_back`): the server stored its events up to `storedUpTo`; the rest continue at `nextSeq`.
 */
export const droneRebaseSchema = z.object({
  turnId: objectIdSchema,
  storedUpTo: z.number().int().nonnegative(),
  nextSeq: z.number().int().positive(),
});
export type DroneRebase = z.infer<typeof droneRebaseSchema>;

/**
 * Sent to a drone once its connection is set up: the turns whose events it must renumber
 * (`rebased`). A drone sends no turn events on a new connection before it.
 */
export const droneReconciledSchema = z.object({
  rebased: z.array(droneRebaseSchema).max(64),
});
export type DroneReconciled = z.infer<typeof droneReconciledSchema>;

export const turnControlSchema = z.object({ turnId: objectIdSchema });
export type TurnControl = z.infer<typeof turnControlSchema>;

export const approvalDecisionSchema = z.object({
  turnId: objectIdSchema,
  approvalId: z.string().min(1),
  approve: z.boolean(),
  input: z.unknown().optional(),
  /** Approved for good in this session: the running turn stops asking for the same command too. */
  alwaysAllow: z.boolean().optional(),
});
export type ApprovalDecision = z.infer<typeof approvalDecisionSchema>;

/** A user's message to a turn the drone runs: it joins the conversation at the next step. */
export const turnSteeringSchema = z.object({
  turnId: objectIdSchema,
  messageId: z.string().min(1).max(100),
  text: z.string().min(1).max(100_000),
  /** Stop the model call or commands in flight first. */
  interrupt: z.boolean(),
});
export type TurnSteering = z.infer<typeof turnSteeringSchema>;

/**
 * The web IDE's file access. With `sessionId`, in that session's worktree (read and write);
 * without, in the project's default-branch checkout, which is read-only.
 */
export const fileRequestSchema = z.discriminatedUnion("op", [
  z.object({
    op: z.literal("list"),
    projectSlug: z.string(),
    gitUrl: z.string(),
    sessionId: objectIdSchema.optional(),
    path: z.string(),
  }),
  z.object({
    op: z.literal("read"),
    projectSlug: z.string(),
    gitUrl: z.string(),
    sessionId: objectIdSchema.optional(),
    path: z.string(),
  }),
  z.object({
    op: z.literal("write"),
    projectSlug: z.string(),
    gitUrl: z.string(),
    sessionId: objectIdSchema.optional(),
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

/** Undo one turn's commit in its session's worktree: the session and project name the worktree. */
export const turnRevertRequestSchema = z.object({
  turnId: objectIdSchema,
  sessionId: objectIdSchema,
  projectSlug: z.string().min(1),
  /** The project delivers (`branch`, `pull-request`): push the branch after the revert commit. */
  deliver: z.boolean().default(false),
});
export type TurnRevertRequest = z.infer<typeof turnRevertRequestSchema>;

/**
 * `reverted`: a revert commit undid the turn's `files`; `restored`: the turn's commit had failed,
 * and its uncommitted `files` were put back as the turn found them; `unchanged`: it changed nothing.
 */
export const turnRevertResultSchema = z.discriminatedUnion("outcome", [
  z.object({
    outcome: z.literal("reverted"),
    commit: z.string(),
    files: z.array(z.string()),
    /** With `deliver`: whether the branch was pushed, or why not, in words. */
    pushed: z.boolean().optional(),
    pushError: z.string().optional(),
  }),
  z.object({ outcome: z.literal("restored"), files: z.array(z.string()) }),
  z.object({ outcome: z.literal("unchanged") }),
]);
export type TurnRevertResult = z.infer<typeof turnRevertResultSchema>;

/** Events the server sends a drone. */
export interface DroneServerToClientEvents {
  work_order: (order: IWorkOrder, ack: (result: Ack) => void) => void;
  turn_cancel: (control: TurnControl, ack: (result: Ack) => void) => void;
  /**
   * The turn is given to this drone again from its last stored checkpoint (it was interrupted
   * while the drone's connection was down): the run it still has ends unheard, its journal dropped.
   */
  turn_superseded: (control: TurnControl, ack: (result: Ack) => void) => void;
  approval_decision: (decision: ApprovalDecision, ack: (result: Ack) => void) => void;
  /** A steering message; answered once the drone has it journaled. */
  turn_message: (message: TurnSteering, ack: (result: Ack) => void) => void;
  file_request: (
    request: FileRequest,
    ack: (result: Ack<{ result: FileResponse }>) => void,
  ) => void;
  /** "Check" a provider from the drone's machine, where its turns call it. */
  provider_check: (
    request: ProviderCheckRequest,
    ack: (result: Ack<{ result: ProviderCheckResult }>) => void,
  ) => void;
  /** Revert a turn's commit in the session's worktree, if this drone holds it. */
  turn_revert: (
    request: TurnRevertRequest,
    ack: (result: Ack<{ result: TurnRevertResult }>) => void,
  ) => void;
  /** Put the session's branch and worktree back as before some turns (rewind), if this drone holds it. */
  session_rewind: (
    request: SessionRewindRequest,
    ack: (result: Ack<{ result: SessionRewindResult }>) => void,
  ) => void;
  /** Commit a session worktree's uncommitted changes and push its branch (`POST /api/sessions/:id/deliver`). */
  session_deliver: (
    request: DeliverRequest,
    ack: (result: Ack<{ result: DeliverResult }>) => void,
  ) => void;
  /** Where the session's worktree stands: its branch against the default branch, and hand edits. */
  session_worktree: (
    request: SessionWorktreeRequest,
    ack: (result: Ack<{ result: SessionWorktreeState }>) => void,
  ) => void;
  /** Whether a git URL answers from this drone's machine (`git ls-remote`, hardened, with a timeout). */
  git_remote_check: (
    request: GitRemoteCheckRequest,
    ack: (result: Ack<{ result: GitRemoteCheckResult }>) => void,
  ) => void;
  /** Clone or fetch a project's checkout now, under the clone lock, as a turn does. */
  project_clone: (
    request: ProjectCloneRequest,
    ack: (result: Ack<{ result: ProjectCloneResult }>) => void,
  ) => void;
  /** The project's `/name` commands (`GET /api/projects/:id/commands`), if this drone holds it. */
  project_commands: (
    request: ProjectCommandsRequest,
    ack: (result: Ack<{ result: ProjectCommandsAnswer }>) => void,
  ) => void;
  /** The connection is set up (turns the drone still runs taken back): send events now. */
  reconciled: (notice: DroneReconciled, ack: (result: Ack) => void) => void;
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
  /** It refused an update the server hands out (the drones page says so, with why). */
  update_refused: (
    refusal: z.input<typeof droneUpdateRefusalSchema>,
    ack: (result: Ack) => void,
  ) => void;
}

// ---------- /ide ----------

export const ideHandshakeSchema = z.object({ token: z.string().min(1).max(200) });

export const subscribeSchema = z
  .object({
    turnId: objectIdSchema.optional(),
    sessionId: objectIdSchema.optional(),
    /**
     * `true`: what every turn of the user is doing (`turn_activity` notices), from now on; the
     * Activity page reads the rest over REST.
     */
    activity: z.literal(true).optional(),
    /** Receive only events with a larger seq (per turn); 0 replays everything. */
    after: z.number().int().nonnegative().default(0),
  })
  .refine(
    (value) =>
      [value.turnId, value.sessionId, value.activity].filter((given) => given !== undefined)
        .length === 1,
    { message: "give exactly one of turnId, sessionId or activity" },
  );
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
  /** What the user's running turns do now (pass, tool, approvals), to an activity subscription. */
  turn_activity: (message: { activity: TurnActivity[] }) => void;
  /** A turn's events wait on an outage of the database or Redis (`waiting`), or no longer (null). */
  turn_waiting: (message: { turnId: string; waiting: TurnWaiting | null }) => void;
}

/** Events a browser sends on /ide. */
export interface IdeClientToServerEvents {
  subscribe: (request: z.input<typeof subscribeSchema>, ack: (result: Ack) => void) => void;
  unsubscribe: (request: z.input<typeof subscribeSchema>, ack: (result: Ack) => void) => void;
}
