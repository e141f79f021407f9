// Projects (a per-user slug names the drone workspace), their clone, and their chat sessions.
import { z } from "zod";
import {
  chatSessionSchema,
  createProjectBodySchema,
  createSessionBodySchema,
  pageQuerySchema,
  projectSchema,
  updateProjectBodySchema,
} from "../api.ts";
import { projectCommandsAnswerSchema, projectCommandsQuerySchema } from "../commands.ts";
import { gitUrlCheckSchema, projectCloneAnswerSchema } from "../manage.ts";
import { defineRoute, idParams, listAnswer, noContent, optionalBody } from "./route.ts";

const projectParams = idParams("Project");

export const projectRoutes = {
  /** The git URL is checked by an online drone first: one that does not answer is a 400. */
  create: defineRoute({
    method: "POST",
    path: "/api/projects",
    caller: "user",
    body: createProjectBodySchema,
    subject: "project",
    answers: { 201: z.object({ project: projectSchema, gitUrlCheck: gitUrlCheckSchema }) },
  }),
  list: defineRoute({
    method: "GET",
    path: "/api/projects",
    caller: "user",
    query: pageQuerySchema,
    answers: { 200: listAnswer("projects", projectSchema) },
  }),
  /** The next turn's work order carries the change. */
  update: defineRoute({
    method: "PATCH",
    path: "/api/projects/:id",
    caller: "user",
    params: projectParams,
    body: optionalBody(updateProjectBodySchema),
    subject: "project",
    answers: { 200: z.object({ project: projectSchema }) },
  }),
  /** With its sessions, turns and their events; 409 while a turn of it runs. */
  remove: defineRoute({
    method: "DELETE",
    path: "/api/projects/:id",
    caller: "user",
    params: projectParams,
    answers: { 204: noContent },
  }),
  /** A drone clones (or fetches) the checkout now, so its files show before any turn. */
  clone: defineRoute({
    method: "POST",
    path: "/api/projects/:id/clone",
    caller: "user",
    params: projectParams,
    answers: { 200: projectCloneAnswerSchema },
  }),
  createSession: defineRoute({
    method: "POST",
    path: "/api/projects/:id/sessions",
    caller: "user",
    params: projectParams,
    body: createSessionBodySchema,
    subject: "session",
    answers: { 201: z.object({ session: chatSessionSchema }) },
  }),
  sessions: defineRoute({
    method: "GET",
    path: "/api/projects/:id/sessions",
    caller: "user",
    params: projectParams,
    query: pageQuerySchema,
    answers: { 200: listAnswer("sessions", chatSessionSchema) },
  }),
  /**
   * The project's `/name` commands for the composer, asked of a drone holding it: with `?session=`
   * those of the session's branch; 503 when no online drone holds the project.
   */
  commands: defineRoute({
    method: "GET",
    path: "/api/projects/:id/commands",
    caller: "user",
    params: projectParams,
    query: projectCommandsQuerySchema,
    answers: { 200: projectCommandsAnswerSchema },
  }),
};
