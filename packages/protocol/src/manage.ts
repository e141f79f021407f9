// Managing what a user made: checking a project's git URL and cloning it now, both through a drone.
import { z } from "zod";

/** Ask a drone whether a git URL answers `git ls-remote` (socket `git_remote_check`). */
export const gitRemoteCheckRequestSchema = z.object({
  /** Never an option: a URL starting with `-` would be read by git as one. */
  gitUrl: z.string().min(1).max(2048).regex(/^[^-]/, "a git URL does not start with -"),
});
export type GitRemoteCheckRequest = z.infer<typeof gitRemoteCheckRequestSchema>;

/** Why a URL did not answer: no such repository, credentials refused, or no connection at all. */
export const gitRemoteProblemSchema = z.enum(["not_found", "authentication_failed", "unreachable"]);
export type GitRemoteProblem = z.infer<typeof gitRemoteProblemSchema>;

/** The drone's answer: `ok`, or what is wrong in words (credentials removed from git's text). */
export const gitRemoteCheckResultSchema = z.discriminatedUnion("ok", [
  z.object({ ok: z.literal(true), defaultBranch: z.string().nullable() }),
  z.object({
    ok: z.literal(false),
    problem: gitRemoteProblemSchema,
    message: z.string(),
  }),
]);
export type GitRemoteCheckResult = z.infer<typeof gitRemoteCheckResultSchema>;

/**
 * `POST /api/projects` says whether its git URL was checked: through one of the user's online
 * drones (`checked: true`), or not, when none was online to ask.
 */
export const gitUrlCheckSchema = z.object({
  checked: z.boolean(),
  /** The drone that checked it (by name), when one did. */
  drone: z.string().optional(),
  /** The remote's default branch, when the check saw it. */
  defaultBranch: z.string().nullable().optional(),
  message: z.string(),
});
export type GitUrlCheck = z.infer<typeof gitUrlCheckSchema>;

/** Clone (or fetch) a project's checkout now, as a turn would (socket `project_clone`). */
export const projectCloneRequestSchema = z.object({
  /** A project slug names a folder of the drone's workspace: lowercase letters, digits, dashes. */
  projectSlug: z.string().regex(/^[a-z0-9][a-z0-9-]{0,99}$/),
  gitUrl: z.string().min(1).max(2048),
  defaultBranch: z.string().optional(),
});
export type ProjectCloneRequest = z.infer<typeof projectCloneRequestSchema>;

export const projectCloneResultSchema = z.object({
  outcome: z.enum(["cloned", "fast-forwarded", "up-to-date", "kept-local"]),
  message: z.string(),
  /** The checkout's branch after the clone or fetch. */
  branch: z.string().nullable(),
});
export type ProjectCloneResult = z.infer<typeof projectCloneResultSchema>;

/** `POST /api/projects/:id/clone`: what the drone did, and which drone. */
export const projectCloneAnswerSchema = projectCloneResultSchema.extend({
  drone: z.object({ _id: z.string(), name: z.string() }),
});
export type ProjectCloneAnswer = z.infer<typeof projectCloneAnswerSchema>;
