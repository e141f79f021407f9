// REST request and response bodies (docs/reference.md).
import { z } from "zod";
import { baseUrlSchema } from "./api-providers.ts";
import {
  allowedHostSchema,
  approvalPolicySchema,
  dateSchema,
  networkModeSchema,
  objectIdSchema,
  sandboxInfoSchema,
  turnLimitsSchema,
  turnModeSchema,
} from "./common.ts";
import {
  commitAuthorSchema,
  deliveryModeSchema,
  forgeKindSchema,
  sessionWorktreeStateSchema,
} from "./delivery.ts";
import { forgeEventsSettingsSchema } from "./forge-events.ts";
import { promptImageInputSchema } from "./images.ts";
import { droneLabelsSchema } from "./labels.ts";
import { envBodySchema, mcpServersBodySchema, projectMcpServerSchema } from "./mcp.ts";
import { hooksConfigSchema } from "./project-hooks.ts";
import { branchPrefixSchema } from "./session-branch.ts";

const email = z
  .email()
  .max(254)
  .transform((value) => value.toLowerCase());
const password = z.string().min(8, "must be at least 8 characters").max(200);

export const signupBodySchema = z.object({
  email,
  password,
  name: z.string().trim().min(1).max(100).optional(),
  /** The invite code, where signup is by invitation (GADGET_SIGNUP=invite). */
  invite: z.string().min(1).max(200).optional(),
});
export type SignupBody = z.infer<typeof signupBodySchema>;

export const loginBodySchema = z.object({ email, password: z.string().min(1).max(200) });
export type LoginBody = z.infer<typeof loginBodySchema>;

export const userSchema = z.object({
  _id: z.string(),
  email: z.string(),
  name: z.string(),
  createdAt: dateSchema,
});
export type User = z.infer<typeof userSchema>;

export const authResponseSchema = z.object({ user: userSchema, token: z.string() });
export type AuthResponse = z.infer<typeof authResponseSchema>;

/** One sign-in (a login's token) as `GET /api/auth/sign-ins` lists it; never the token itself. */
export const signInSchema = z.object({
  /** Identifies the sign-in for `DELETE /api/auth/sign-ins/:id`; not usable as a token. */
  id: z.string(),
  createdAt: dateSchema,
  lastUsedAt: dateSchema.nullable(),
  /** When it stops working unless used before (the expiry slides with use). */
  expiresAt: dateSchema,
  /** The sign-in that asked. */
  current: z.boolean(),
  /** The browser or program it was made with ("Firefox on macOS", "curl"); null if unknown. */
  device: z.string().nullable(),
});
export type SignIn = z.infer<typeof signInSchema>;

export const registrationTokenResponseSchema = z.object({
  /** The token's id (its hash): `GET /api/drones/registration-tokens/:id` follows it. */
  _id: z.string(),
  token: z.string(),
  expiresAt: dateSchema,
  /** `gadget-drone register …`, for a machine that has gadget-drone already. */
  command: z.string(),
  /** The one line to paste: `curl -fsSL <server>/install.sh | sh -s -- --token <token>`. */
  install: z.string(),
});
export type RegistrationTokenResponse = z.infer<typeof registrationTokenResponseSchema>;

export const registerDroneBodySchema = z.object({
  token: z.string().min(1),
  name: z.string().trim().min(1).max(100),
  hostname: z.string().max(255).optional(),
  platform: z.string().max(100).optional(),
  version: z.string().max(50).optional(),
  capacity: z.number().int().min(1).max(64).optional(),
  /** `--label key=value` / `--label key`: what turns may require of this drone. */
  labels: droneLabelsSchema.optional(),
});
export type RegisterDroneBody = z.infer<typeof registerDroneBodySchema>;

/**
 * A self-update the drone refused (`start --auto-update`): the package failed its sha256 or its
 * start check, or stopped at start and was rolled back. Kept on the drone until a newer one runs.
 */
export const droneUpdateRefusalSchema = z.object({
  version: z.string().min(1).max(50),
  reason: z.string().min(1).max(2000),
  at: dateSchema,
});
export type DroneUpdateRefusal = z.infer<typeof droneUpdateRefusalSchema>;

/** `draining`: online but stopping (its first Ctrl-C or SIGTERM): it takes no new turn. */
export const droneStatusSchema = z.enum(["online", "draining", "offline"]);

export const droneSchema = z.object({
  _id: z.string(),
  name: z.string(),
  status: droneStatusSchema,
  activeTurns: z.number().int().nonnegative(),
  capacity: z.number().int().positive(),
  lastSeenAt: dateSchema.nullable(),
  hostname: z.string().nullable(),
  platform: z.string().nullable(),
  version: z.string().nullable(),
  /** What confines its commands, as it last reported; null before its first connection. */
  sandbox: sandboxInfoSchema.nullable(),
  /** Its labels: the user's and the ones it adds about itself (`os`, `arch`, `sandbox`). */
  labels: z.array(z.string()),
  /** Started with `--ephemeral`: it takes one turn, then exits and is unregistered. */
  ephemeral: z.boolean(),
  /** Its version is older than the server's: it still works, but should be upgraded. */
  outdated: z.boolean(),
  /** The newer version it last refused to update to, and why; null once it runs a newer one. */
  updateRefused: droneUpdateRefusalSchema.nullable(),
});
export type Drone = z.infer<typeof droneSchema>;

/** `PATCH /api/drones/:id`: its name or its labels (the automatic ones stay as it reports them). */
export const updateDroneBodySchema = z
  .object({
    name: z.string().trim().min(1).max(100),
    labels: droneLabelsSchema,
  })
  .partial()
  .strict();
export type UpdateDroneBody = z.infer<typeof updateDroneBodySchema>;

/**
 * `POST /api/drones/registration-tokens`: single use and 15 minutes by default; `reusable` for a
 * fleet (any number of drones until it expires or is revoked), with labels every drone gets.
 */
export const createRegistrationTokenBodySchema = z
  .object({
    reusable: z.boolean().default(false),
    expiresInHours: z
      .number()
      .positive()
      .max(24 * 365)
      .optional(),
    labels: droneLabelsSchema.optional(),
  })
  .strict();
export type CreateRegistrationTokenBody = z.infer<typeof createRegistrationTokenBodySchema>;

export const registerDroneResponseSchema = z.object({ drone: droneSchema, credential: z.string() });
export type RegisterDroneResponse = z.infer<typeof registerDroneResponseSchema>;

/**
 * A project's forge as set: its kind, API URL (http(s), no credentials) and token. The token may
 * be left out to keep the one stored (changing only the URL); a first setting needs it.
 */
export const forgeBodySchema = z
  .object({
    kind: forgeKindSchema,
    apiUrl: baseUrlSchema,
    token: z.string().trim().min(1).max(4096).optional(),
    /** Work that starts on the forge; left out keeps the stored settings. */
    events: forgeEventsSettingsSchema.optional(),
  })
  .strict();
export type ForgeBody = z.infer<typeof forgeBodySchema>;

/** A project's forge as returned: never with its token. */
export const projectForgeSchema = z.object({
  kind: forgeKindSchema,
  apiUrl: z.string(),
  hasToken: z.boolean(),
  /** Null until set: the forge's events start no work. */
  events: forgeEventsSettingsSchema.nullable().default(null),
  /** Whether a webhook secret was made (`POST /api/projects/:id/forge-events/secret`). */
  hasEventsSecret: z.boolean().default(false),
});
export type ProjectForge = z.infer<typeof projectForgeSchema>;

/** `PATCH /api/projects/:id`: any of these; `null` clears the default branch. */
export const updateProjectBodySchema = z
  .object({
    name: z.string().trim().min(1).max(100),
    defaultBranch: z.string().trim().min(1).max(255).nullable(),
    verifyCommands: z.array(z.string().trim().min(1).max(1000)).max(20),
    /** What the sandbox lets commands reach: `none` (default), `allowlist` (allowedHosts only), `open`. */
    network: networkModeSchema,
    /** Hosts reachable under `allowlist` (an empty list allows none). */
    allowedHosts: z.array(allowedHostSchema).max(100),
    /** Start of each session's branch name (default `gadget/`); the next session worktree uses it. */
    branchPrefix: branchPrefixSchema,
    /** `workspace` (default), `branch` (push after every turn) or `pull-request` (push, then open or update the session's pull request). */
    delivery: deliveryModeSchema,
    /** The author of the turns' commits; `null` clears it (the drone machine's git identity). */
    commitAuthor: commitAuthorSchema.nullable(),
    /** Where pull requests are opened, with a token (encrypted at rest, never returned); `null` removes it. */
    forge: forgeBodySchema.nullable(),
    /** Labels a drone must have to run the project's turns (`key=value` or a bare `key`). */
    requires: droneLabelsSchema,
    /** The project's MCP servers (the whole list; secrets left out keep the stored ones). */
    mcpServers: mcpServersBodySchema,
    /**
     * Environment variables every command of the project's turns gets (stored encrypted, never
     * answered; the whole map, a value `null` keeps the stored one). Nothing of the drone's own
     * environment reaches a command but PATH, HOME, LANG, LC_*, TERM, TZ and TMPDIR.
     */
    env: envBodySchema,
    /** The project's hooks (beside `.gadget/hooks.json`): the whole set; `{}` removes them. */
    hooks: hooksConfigSchema,
  })
  .partial()
  .strict();
export type UpdateProjectBody = z.infer<typeof updateProjectBodySchema>;

export const createProjectBodySchema = updateProjectBodySchema
  .omit({ name: true, defaultBranch: true })
  .extend({
    name: z.string().trim().min(1).max(100),
    gitUrl: z.string().trim().min(1).max(2048),
    defaultBranch: z.string().trim().min(1).max(255).optional(),
  })
  .strip();
export type CreateProjectBody = z.infer<typeof createProjectBodySchema>;

export const projectSchema = z.object({
  _id: z.string(),
  name: z.string(),
  slug: z.string(),
  gitUrl: z.string(),
  defaultBranch: z.string().nullable(),
  verifyCommands: z.array(z.string()),
  network: networkModeSchema,
  allowedHosts: z.array(z.string()),
  branchPrefix: z.string(),
  delivery: deliveryModeSchema,
  commitAuthor: commitAuthorSchema.nullable(),
  forge: projectForgeSchema.nullable(),
  requires: z.array(z.string()),
  mcpServers: z.array(projectMcpServerSchema),
  /** The names of the project's own variables (their values are never answered). */
  envKeys: z.array(z.string()),
  /** The project's own hooks (`.gadget/hooks.json` in the repository adds to them). */
  hooks: hooksConfigSchema.optional(),
  createdAt: dateSchema,
});
export type Project = z.infer<typeof projectSchema>;

/** One command a session lets run without asking, exactly as the agent wrote it. */
export const allowedCommandSchema = z.string().min(1).max(2000);

/**
 * What happens to a turn whose drone went away: `same-drone` (default) — the drone goes on with
 * it when it restarts within the grace; `any-drone` — besides, a turn interrupted after the grace
 * is resumed on another matching drone; `off` — the turn is interrupted and waits for Resume.
 * At most 3 automatic resumes per turn.
 */
export const autoResumeSchema = z.enum(["same-drone", "any-drone", "off"]);
export type AutoResume = z.infer<typeof autoResumeSchema>;

export const createSessionBodySchema = z.object({
  name: z.string().trim().min(1).max(200),
  mode: turnModeSchema.optional(),
  approval: approvalPolicySchema.optional(),
  autoResume: autoResumeSchema.optional(),
});
export type CreateSessionBody = z.infer<typeof createSessionBodySchema>;

/** `PATCH /api/sessions/:id`: rename, change mode or approval, or set the allowed commands (to remove some). */
export const updateSessionBodySchema = createSessionBodySchema
  .extend({ allowedCommands: z.array(allowedCommandSchema).max(200) })
  .partial()
  .strict();
export type UpdateSessionBody = z.infer<typeof updateSessionBodySchema>;

export const chatSessionSchema = z.object({
  _id: z.string(),
  project: z.string(),
  name: z.string(),
  mode: turnModeSchema,
  approval: approvalPolicySchema,
  /** Commands `run_command` runs without an approval under `on-write` (added from approval cards). */
  allowedCommands: z.array(z.string()).default([]),
  autoResume: autoResumeSchema.default("same-drone"),
  /** The session and turn it was forked from (POST /api/sessions/:id/fork). */
  forkedFrom: z.object({ session: z.string(), turn: z.string() }).nullable().optional(),
  createdAt: dateSchema,
});
export type ChatSession = z.infer<typeof chatSessionSchema>;

/**
 * `GET /api/sessions/:id`: the session with its branch (null until a turn made it) and where its
 * worktree stands on the drone holding it (null when no online drone holds it).
 */
export const sessionDetailSchema = chatSessionSchema.extend({
  branch: z.string().nullable(),
  /** The session's pull request once a turn opened it (delivery `pull-request`). */
  pullRequest: z.object({ url: z.string(), number: z.number().int() }).nullable(),
  worktree: sessionWorktreeStateSchema
    .pick({ ahead: true, behind: true, dirty: true, head: true, base: true })
    .nullable(),
});
export type SessionDetail = z.infer<typeof sessionDetailSchema>;

export const createTurnBodySchema = z.object({
  prompt: z.string().trim().min(1).max(100_000),
  providerId: z.string().min(1),
  droneId: z.string().min(1).optional(),
  limits: turnLimitsSchema.optional(),
  /** Labels the drone must have, besides the project's `requires`. */
  requires: droneLabelsSchema.optional(),
  /**
   * Images sent with the prompt (decision 0051), checked by the route for precise answers:
   * at most `maxPromptImages`, each PNG/JPEG/GIF/WebP of at most `maxImageBytes`.
   */
  images: z.array(promptImageInputSchema).max(64).optional(),
});
export type CreateTurnBody = z.infer<typeof createTurnBodySchema>;

export const approvalDecisionBodySchema = z
  .object({
    approve: z.boolean(),
    input: z.unknown().optional(),
    /** Approve this `run_command` and let the same exact command run without asking in this session. */
    alwaysAllow: z.boolean().optional(),
  })
  .refine((body) => !body.alwaysAllow || (body.approve && body.input === undefined), {
    message: "alwaysAllow goes only with approve: true and no replacement input",
    path: ["alwaysAllow"],
  });
export type ApprovalDecisionBody = z.infer<typeof approvalDecisionBodySchema>;

/**
 * `?cursor=&limit=` of every list route: the items after `cursor` (the `nextCursor` of the page
 * before), oldest first. A page answers `nextCursor: null` when nothing follows it.
 */
export const pageQuerySchema = z.object({
  cursor: objectIdSchema.optional(),
  limit: z.coerce.number().int().min(1).max(500).default(200),
});
export type PageQuery = z.infer<typeof pageQuerySchema>;

export const eventsQuerySchema = z.object({
  after: z.coerce.number().int().nonnegative().default(0),
  limit: z.coerce.number().int().min(1).max(1000).default(200),
});

/** `?session=`: the session's worktree; without it, the project's default-branch checkout. */
export const filePathQuerySchema = z.object({
  path: z.string().max(4096).default(""),
  session: objectIdSchema.optional(),
});

export const writeFileBodySchema = z.object({
  /** The session whose worktree gets the edit (the default-branch checkout is read-only). */
  sessionId: objectIdSchema.optional(),
  path: z.string().min(1).max(4096),
  content: z.string().max(10 * 1024 * 1024),
  baseSha: z.string().optional(),
});
export type WriteFileBody = z.infer<typeof writeFileBodySchema>;

export const fileEntrySchema = z.object({
  name: z.string(),
  path: z.string(),
  type: z.enum(["file", "directory", "symlink"]),
  size: z.number().int().nonnegative().optional(),
});
export type FileEntry = z.infer<typeof fileEntrySchema>;

export const fileContentSchema = z.object({
  path: z.string(),
  content: z.string(),
  sha: z.string(),
});
export type FileContent = z.infer<typeof fileContentSchema>;
