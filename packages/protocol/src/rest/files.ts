// A project's files, relayed to a drone holding its checkout: `?session=` (a write's `sessionId`)
// works in that session's worktree; without it, in the read-only default-branch checkout.
import { z } from "zod";
import {
  fileContentSchema,
  fileEntrySchema,
  filePathQuerySchema,
  writeFileBodySchema,
} from "../api.ts";
import { defineRoute, idParams } from "./route.ts";

const projectParams = idParams("Project");

export const fileRoutes = {
  list: defineRoute({
    method: "GET",
    path: "/api/projects/:id/files",
    caller: "user",
    params: projectParams,
    query: filePathQuerySchema,
    answers: { 200: z.object({ entries: z.array(fileEntrySchema) }) },
  }),
  /** `?path=` is required. */
  read: defineRoute({
    method: "GET",
    path: "/api/projects/:id/file",
    caller: "user",
    params: projectParams,
    query: filePathQuerySchema,
    answers: { 200: fileContentSchema },
  }),
  /** 409 on a stale `baseSha`. Up to 10 MiB of content: the one route with a body this large. */
  write: defineRoute({
    method: "PUT",
    path: "/api/projects/:id/file",
    caller: "user",
    params: projectParams,
    body: writeFileBodySchema,
    subject: "file",
    bodyLimit: 12 * 1024 * 1024,
    answers: { 200: z.object({ sha: z.string() }) },
  }),
};
