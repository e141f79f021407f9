// A chat session in a project: an ordered series of turns sharing a mode and approval policy.
import type {
  ApprovalPolicy,
  AutoResume,
  IChatMessage,
  PullRequestRef,
  TurnMode,
} from "@gadget/protocol";
import { type Connection, Schema, type Types } from "mongoose";

export interface ChatSessionDocument {
  _id: Types.ObjectId;
  user: Types.ObjectId;
  project: Types.ObjectId;
  name: string;
  mode: TurnMode;
  approval: ApprovalPolicy;
  /** Exact commands run_command runs without asking under `on-write` ("Always allow" on a card). */
  allowedCommands?: string[];
  /** What happens to a turn whose drone went away (protocol `autoResumeSchema`). */
  autoResume?: AutoResume;
  /** Prompt and answer of every completed turn, in completion order: the next work order's context. */
  history: IChatMessage[];
  /** Turns whose exchange is in `history`, so a retried completion does not add it twice. */
  rememberedTurns: Types.ObjectId[];
  /**
   * The drone the session's latest turn went to: it holds the session's worktree. A fork's, until
   * its first turn, is its source's, which holds the commit the fork starts at.
   */
  drone?: Types.ObjectId | null;
  /** The session's pull request once a turn opened it (delivery `pull-request`); later turns update it. */
  pullRequest: PullRequestRef | null;
  /** The session and turn it was forked from, and the commit its branch starts at (if any). */
  forkedFrom?: { session: Types.ObjectId; turn: Types.ObjectId; commit: string | null } | null;
  /** The forge issue the session works on (session `issue-<n>`): its pull request closes it. */
  forgeIssue?: number | null;
  createdAt: Date;
}

export const chatSessionSchema = new Schema<ChatSessionDocument>(
  {
    user: { type: Schema.Types.ObjectId, required: true, ref: "User" },
    project: { type: Schema.Types.ObjectId, required: true, ref: "Project" },
    name: { type: String, required: true },
    mode: { type: String, required: true, default: "agent" },
    approval: { type: String, required: true, default: "auto" },
    allowedCommands: { type: [String], default: () => [] },
    autoResume: { type: String, default: "same-drone" },
    history: { type: Schema.Types.Mixed, default: () => [] },
    rememberedTurns: { type: [Schema.Types.ObjectId], default: () => [] },
    drone: { type: Schema.Types.ObjectId, default: null },
    pullRequest: { type: Schema.Types.Mixed, default: null },
    forkedFrom: { type: Schema.Types.Mixed, default: null },
    forgeIssue: { type: Number, default: null },
    createdAt: { type: Date, required: true, default: () => new Date() },
  },
  { versionKey: false },
);
chatSessionSchema.index({ user: 1, project: 1, createdAt: 1 });

export function chatSessionModel(connection: Connection) {
  return connection.model<ChatSessionDocument>("ChatSession", chatSessionSchema, "chat_sessions");
}
