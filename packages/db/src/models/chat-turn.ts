// The ChatTurn (docs/architecture.md, "Words"): created when the prompt arrives and updated while the turn runs,
// with the turn's own messages so an interrupted turn can be resumed on any drone.
import type {
  ExitReason,
  FileChange,
  ITurnMessage,
  TurnDelivery,
  TurnLimits,
  TurnMode,
  TurnStats,
  TurnStatus,
} from "@gadget/protocol";
import { type Connection, Schema, type Types } from "mongoose";

/** Statuses in which a drone holds the turn and it counts against the drone's capacity. */
export const activeTurnStatuses: readonly TurnStatus[] = [
  "dispatched",
  "processing",
  "awaiting_approval",
];

export interface PendingApproval {
  id: string;
  callId: string | null;
  /** A budget that asks: the limit the turn reached and how much of it was used. */
  budget?: { limit: string; used: number };
}

export interface ChatTurnDocument {
  _id: Types.ObjectId;
  user: Types.ObjectId;
  session: Types.ObjectId;
  project: Types.ObjectId;
  provider: Types.ObjectId;
  /** The drone holding (or last holding) the turn. */
  drone: Types.ObjectId | null;
  /** The drone the user asked for, if any. */
  requestedDrone: Types.ObjectId | null;
  llm: string;
  mode: TurnMode;
  prompt: string;
  status: TurnStatus;
  response: string | null;
  error: { code: string; message: string } | null;
  exitReason: ExitReason | null;
  limits: TurnLimits;
  /** Labels its drone must have, as the turn asked (the project's `requires` apply too). */
  requires: string[];
  /** The requirements the last "waiting for a drone with labels" status named (said once). */
  waitingForLabels: string | null;
  stats: TurnStats;
  changes: FileChange[];
  /** The session's branch the turn worked on (from its `commit` event); null before it committed. */
  branch: string | null;
  /** The turn's commit on its branch; null when it changed nothing or the commit failed. */
  commit: string | null;
  /** The session's branch as this turn delivered it (pushed, or why not); null when not delivered. */
  delivery: TurnDelivery | null;
  /** Highest stored event seq (flushed with the other updates; TurnEvent is the truth). */
  lastSeq: number;
  /** The turn's own messages from the latest checkpoint (turn_checkpoint). */
  messages: ITurnMessage[];
  /** The engine's saved state from the latest checkpoint; opaque to the server. */
  resumeState: unknown;
  pendingApprovals: PendingApproval[];
  /** Until when the holding drone's lease runs; renewed by heartbeats. */
  leaseExpiresAt: Date | null;
  /** Set when a user asked to cancel; drones told about it through heartbeat acks. */
  cancelRequestedAt: Date | null;
  /**
   * What the turn waits on that outlives a request: its drone's lost connection, a provider's
   * rate limit (`{reason, since, until}`); null otherwise.
   */
  waiting: { reason: string; since: Date; until?: Date } | null;
  /**
   * Set while the turn's drone is offline: the seq of the `drone_lost` event. The drone's events
   * are refused meanwhile; when it comes back its unsent events are numbered after `drone_back`.
   */
  lostSeq: number | null;
  /**
   * The last rate-limit wait of the provider (`quota_wait`): a resumed turn (its drone restarted,
   * or it moved) does not call the provider before `until`, and counts the wait from `since`.
   */
  quotaWait: { since: Date; until: Date } | null;
  /** How many times the server resumed the turn by itself (session `autoResume`), at most 3. */
  autoResumes: number;
  createdAt: Date;
  /** When the turn last became `queued` (creation or resume); dispatch latency is measured from it. */
  queuedAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  /** When a revert commit undid the turn's changes on the session's branch. */
  revertedAt: Date | null;
  revertCommit: string | null;
  /** When a rewind took the turn back: kept readable, left out of later turns' context. */
  rewoundAt?: Date | null;
  /** Users' messages sent to the turn (TurnMessage ids), oldest first. */
  steering?: Types.ObjectId[];
}

const statsSchema = new Schema<TurnStats>(
  {
    toolCallCount: { type: Number, default: 0 },
    inputTokens: { type: Number, default: 0 },
    thinkingTokenCount: { type: Number, default: 0 },
    responseTokens: { type: Number, default: 0 },
    durationMs: { type: Number, default: 0 },
    durationLabel: { type: String, default: "pending" },
    passes: { type: Number, default: 0 },
    cost: { type: Number, default: 0 },
    priced: { type: Boolean },
  },
  { _id: false },
);

export const chatTurnSchema = new Schema<ChatTurnDocument>(
  {
    user: { type: Schema.Types.ObjectId, required: true, ref: "User" },
    session: { type: Schema.Types.ObjectId, required: true, ref: "ChatSession" },
    project: { type: Schema.Types.ObjectId, required: true, ref: "Project" },
    provider: { type: Schema.Types.ObjectId, required: true, ref: "Provider" },
    drone: { type: Schema.Types.ObjectId, default: null, ref: "Drone" },
    requestedDrone: { type: Schema.Types.ObjectId, default: null, ref: "Drone" },
    llm: { type: String, required: true },
    mode: { type: String, required: true },
    prompt: { type: String, required: true },
    status: { type: String, required: true, default: "queued" },
    response: { type: String, default: null },
    error: { type: Schema.Types.Mixed, default: null },
    exitReason: { type: String, default: null },
    limits: { type: Schema.Types.Mixed, default: () => ({}) },
    requires: { type: [String], default: [] },
    waitingForLabels: { type: String, default: null },
    stats: { type: statsSchema, default: () => ({}) },
    changes: {
      type: [new Schema<FileChange>({ path: String, status: String }, { _id: false })],
      default: [],
    },
    branch: { type: String, default: null },
    commit: { type: String, default: null },
    delivery: { type: Schema.Types.Mixed, default: null },
    lastSeq: { type: Number, default: 0 },
    messages: { type: Schema.Types.Mixed, default: () => [] },
    resumeState: { type: Schema.Types.Mixed, default: null },
    pendingApprovals: {
      type: [
        new Schema<PendingApproval>(
          { id: String, callId: String, budget: { type: Schema.Types.Mixed, default: undefined } },
          { _id: false },
        ),
      ],
      default: [],
    },
    leaseExpiresAt: { type: Date, default: null },
    cancelRequestedAt: { type: Date, default: null },
    waiting: { type: Schema.Types.Mixed, default: null },
    lostSeq: { type: Number, default: null },
    quotaWait: { type: Schema.Types.Mixed, default: null },
    autoResumes: { type: Number, default: 0 },
    createdAt: { type: Date, required: true, default: () => new Date() },
    queuedAt: { type: Date, required: true, default: () => new Date() },
    startedAt: { type: Date, default: null },
    finishedAt: { type: Date, default: null },
    revertedAt: { type: Date, default: null },
    revertCommit: { type: String, default: null },
    rewoundAt: { type: Date, default: null },
    steering: { type: [Schema.Types.ObjectId], default: undefined },
  },
  { versionKey: false, minimize: false },
);
// A session's turns, oldest first (listing, and the context of the next work order).
chatTurnSchema.index({ session: 1, createdAt: 1 });
// Queued turns of a user to dispatch when a drone connects or frees capacity.
chatTurnSchema.index({ user: 1, status: 1, createdAt: 1 });
// A user's turns newest first, a page after a (createdAt, _id) cursor: the Activity page.
chatTurnSchema.index({ user: 1, createdAt: -1, _id: -1 });
// Active turns of a drone (capacity, reconnect reconciliation, revocation).
chatTurnSchema.index({ drone: 1, status: 1 });
// The lease sweeper: active turns whose lease lapsed.
chatTurnSchema.index({ status: 1, leaseExpiresAt: 1 });

export function chatTurnModel(connection: Connection) {
  return connection.model<ChatTurnDocument>("ChatTurn", chatTurnSchema, "chat_turns");
}
