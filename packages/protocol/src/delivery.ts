// How a session's branch leaves the drone: the project's delivery setting, the commit author, the
// forge its pull requests are opened on, the `delivery` a turn records, and the server→drone
// request that delivers a session now.
import { z } from "zod";
import { dateSchema, objectIdSchema } from "./common.ts";

/**
 * `workspace` (default): the branch stays on the drone; `branch`: the drone pushes it to `origin`
 * after every turn; `pull-request`: pushed as `branch`, then the session's pull request is opened
 * (or updated) through the project's forge.
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

/** The forges whose REST API opens pull requests (GitLab: merge requests; `gitea`: Forgejo too). */
export const forgeKindSchema = z.enum(["github", "gitlab", "gitea"]);
export type ForgeKind = z.infer<typeof forgeKindSchema>;

/** Where each forge's API is on its public service; a self-hosted one names its own (Gitea: `/api/v1`). */
export const DEFAULT_FORGE_API_URLS: Record<ForgeKind, string> = {
  github: "https://api.github.com",
  gitlab: "https://gitlab.com/api/v4",
  gitea: "https://gitea.com/api/v1",
};

/** Each forge's name in words a user reads. */
export const FORGE_NAMES: Record<ForgeKind, string> = {
  github: "GitHub",
  gitlab: "GitLab",
  gitea: "Gitea",
};

/** The forge as a work order carries it to the drone: with the token, opened for this turn only. */
export const workOrderForgeSchema = z.object({
  kind: forgeKindSchema,
  apiUrl: z.url({ protocol: /^https?$/ }),
  token: z.string().min(1),
});
export type WorkOrderForge = z.infer<typeof workOrderForgeSchema>;

/** A session's pull request (GitLab: merge request) as the server remembers it; `number` is GitLab's iid. */
export const pullRequestRefSchema = z.object({
  url: z.string().min(1),
  number: z.number().int().positive(),
});
export type PullRequestRef = z.infer<typeof pullRequestRefSchema>;

/**
 * The title and body of a session's pull request: the title is the first prompt's first line, the
 * body lists every turn's prompt (its first line), so later turns update it, and names the issue
 * it closes when the session works on one.
 * @example pullRequestText("Login fix", ["Fix the login\nIt fails on Safari", "Add a test"]).title // "Fix the login"
 */
export function pullRequestText(
  sessionName: string,
  prompts: readonly string[],
  closesIssue?: number,
): { title: string; body: string } {
  const firstLine = (prompt: string) => prompt.split("\n")[0]?.trim().slice(0, 200) ?? "";
  const lines = prompts.map(firstLine).filter(Boolean);
  const title = lines[0] ?? sessionName;
  const body = [
    `Opened by Gadget Code for the session "${sessionName}".`,
    "",
    "Turns:",
    ...lines.map((line, index) => `${index + 1}. ${line}`),
    // The forges close the issue when the pull request is merged.
    ...(closesIssue ? ["", `Closes #${closesIssue}`] : []),
  ].join("\n");
  return { title, body };
}

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

/** Where a session's pull request is, and what to open or update it with (the forge token opened). */
export const pullRequestDeliverySchema = z.object({
  forge: workOrderForgeSchema,
  gitUrl: z.string().min(1),
  /** The branch the pull request merges into; absent: the remote's default branch. */
  base: z.string().min(1).optional(),
  title: z.string().min(1),
  body: z.string(),
  /** The session's pull request when one was opened before. */
  existing: pullRequestRefSchema.optional(),
});

/** `session_deliver`: commit the session worktree's uncommitted changes and push its branch. */
export const deliverRequestSchema = z.object({
  projectSlug: z.string().min(1),
  sessionId: objectIdSchema,
  /** The commit message for uncommitted changes (hand edits). */
  message: z.string().min(1),
  commitAuthor: commitAuthorSchema.optional(),
  /** Present when the project delivers pull requests: where, and what to open or update. */
  pullRequest: pullRequestDeliverySchema.optional(),
});
export type DeliverRequest = z.infer<typeof deliverRequestSchema>;

/** What the drone did: `commit` is the branch's head; `committed` when it made a commit now. */
export const deliverResultSchema = z.object({
  branch: z.string(),
  commit: z.string().nullable(),
  committed: z.boolean(),
  pushed: z.boolean(),
  /** Why the push (or opening the pull request) failed, in words. */
  error: z.string().optional(),
  /** The session's pull request, opened or updated now. */
  pullRequest: pullRequestRefSchema.optional(),
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
