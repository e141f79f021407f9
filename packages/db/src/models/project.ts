// A git project of a user; drones clone it into a workspace named by its slug.
import type {
  CommitAuthor,
  DeliveryMode,
  ForgeEventsSettings,
  ForgeKind,
  HooksConfig,
} from "@gadget/protocol";
import { type Connection, Schema, type Types } from "mongoose";

/** The project's forge: its token sealed by the server's secret box, never stored in plain text. */
export interface ProjectForgeDocument {
  kind: ForgeKind;
  apiUrl: string;
  tokenEncrypted: string;
  /** What the forge's webhook may start; null: nothing. */
  events?: ForgeEventsSettings | null;
  /** The webhook's signing secret, sealed (HMAC needs it back); null until made. */
  eventsSecretEncrypted?: string | null;
}

/** One of the project's MCP servers: env values and bearer token sealed by the server's secret box. */
export interface ProjectMcpServerDocument {
  name: string;
  command: string[] | null;
  url: string | null;
  env: Array<{ name: string; valueEncrypted: string }>;
  bearerTokenEncrypted: string | null;
  tools: string[] | null;
}

export interface ProjectDocument {
  _id: Types.ObjectId;
  user: Types.ObjectId;
  name: string;
  /** Unique per user; names the drone's workspace directory. */
  slug: string;
  gitUrl: string;
  defaultBranch: string | null;
  verifyCommands: string[];
  /** What the drone's sandbox lets the project's commands reach: none, allowlist or open. */
  network: "none" | "allowlist" | "open";
  /** Hosts reachable when `network` is allowlist; empty allows none. */
  allowedHosts: string[];
  /** Start of each session's branch name on the drones (`gadget/` unless the user changes it). */
  branchPrefix: string;
  /** Whether drones push a session's branch after each turn (`workspace`: they keep it). */
  delivery: DeliveryMode;
  /** The author of the turns' commits; null: the drone machine's git identity. */
  commitAuthor: CommitAuthor | null;
  /** Where delivery `pull-request` opens the sessions' pull requests; null: nowhere. */
  forge: ProjectForgeDocument | null;
  /** Labels a drone must have to run the project's turns. */
  requires: string[];
  /** The MCP servers whose tools the project's turns get. */
  mcpServers: ProjectMcpServerDocument[];
  /** Variables every command of the project gets: values sealed by the server's secret box. */
  env: Array<{ name: string; valueEncrypted: string }>;
  /** The project's own hooks (checked at the REST edge by hooksConfigSchema); absent: none. */
  hooks?: HooksConfig;
  createdAt: Date;
}

export const projectSchema = new Schema<ProjectDocument>(
  {
    user: { type: Schema.Types.ObjectId, required: true, ref: "User" },
    name: { type: String, required: true },
    slug: { type: String, required: true },
    gitUrl: { type: String, required: true },
    defaultBranch: { type: String, default: null },
    verifyCommands: { type: [String], default: [] },
    network: { type: String, enum: ["none", "allowlist", "open"], default: "none" },
    allowedHosts: { type: [String], default: [] },
    branchPrefix: { type: String, default: "gadget/" },
    delivery: { type: String, enum: ["workspace", "branch", "pull-request"], default: "workspace" },
    commitAuthor: {
      type: new Schema<CommitAuthor>({ name: String, email: String }, { _id: false }),
      default: null,
    },
    forge: {
      type: new Schema<ProjectForgeDocument>(
        {
          kind: String,
          apiUrl: String,
          tokenEncrypted: String,
          events: {
            type: new Schema<ForgeEventsSettings>(
              {
                enabled: Boolean,
                trigger: String,
                label: String,
                assignee: { type: String, default: null },
                reviewFollowUps: Boolean,
                checkFollowUps: Boolean,
              },
              { _id: false },
            ),
            default: null,
          },
          eventsSecretEncrypted: { type: String, default: null },
        },
        { _id: false },
      ),
      default: null,
    },
    requires: { type: [String], default: [] },
    mcpServers: {
      type: [
        new Schema<ProjectMcpServerDocument>(
          {
            name: { type: String, required: true },
            command: { type: [String], default: null },
            url: { type: String, default: null },
            env: {
              type: [new Schema({ name: String, valueEncrypted: String }, { _id: false })],
              default: [],
            },
            bearerTokenEncrypted: { type: String, default: null },
            tools: { type: [String], default: null },
          },
          { _id: false },
        ),
      ],
      default: [],
    },
    env: {
      type: [new Schema({ name: String, valueEncrypted: String }, { _id: false })],
      default: [],
    },
    hooks: { type: Schema.Types.Mixed, default: undefined },
    createdAt: { type: Date, required: true, default: () => new Date() },
  },
  { versionKey: false },
);
projectSchema.index({ user: 1, slug: 1 }, { unique: true });
projectSchema.index({ user: 1, createdAt: 1 });

export function projectModel(connection: Connection) {
  return connection.model<ProjectDocument>("Project", projectSchema, "projects");
}
