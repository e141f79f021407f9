// A session: read with its branch and worktree, changed, deleted, delivered now; its turns listed
// and created.
import { z } from "zod";
import {
  chatSessionSchema,
  createTurnBodySchema,
  pageQuerySchema,
  sessionDetailSchema,
  updateSessionBodySchema,
} from "../api.ts";
import { sessionDeliveryAnswerSchema } from "../delivery.ts";
import { forkBodySchema, rewindBodySchema, sessionRewindResultSchema } from "../steering.ts";
import { chatTurnSchema } from "../turn.ts";
import { defineRoute, idParams, listAnswer, noContent, optionalBody } from "./route.ts";

const sessionParams = idParams("Session");

export const sessionRoutes = {
  /** With its branch, pull request, and where its worktree stands on the drone holding it. */
  get: defineRoute({
    method: "GET",
    path: "/api/sessions/:id",
    caller: "user",
    params: sessionParams,
    answers: { 200: z.object({ session: sessionDetailSchema }) },
  }),
  /** Applies to the session's next turn; a running turn keeps what it started with. */
  update: defineRoute({
    method: "PATCH",
    path: "/api/sessions/:id",
    caller: "user",
    params: sessionParams,
    body: optionalBody(updateSessionBodySchema),
    subject: "session",
    answers: { 200: z.object({ session: chatSessionSchema }) },
  }),
  /** With its turns and their events; 409 while a turn of it runs. */
  remove: defineRoute({
    method: "DELETE",
    path: "/api/sessions/:id",
    caller: "user",
    params: sessionParams,
    answers: { 204: noContent },
  }),
  /** Commits the worktree's uncommitted changes and pushes its branch (a failed push answers too). */
  deliver: defineRoute({
    method: "POST",
    path: "/api/sessions/:id/deliver",
    caller: "user",
    params: sessionParams,
    answers: { 202: z.object({ delivery: sessionDeliveryAnswerSchema }) },
  }),
  /** 202: the turn is queued and dispatched to a drone as soon as one can take it. */
  createTurn: defineRoute({
    method: "POST",
    path: "/api/sessions/:id/turns",
    caller: "user",
    params: sessionParams,
    body: createTurnBodySchema,
    subject: "turn",
    // Room for the prompt's images (maxPromptImages of maxImageBytes, in base64).
    bodyLimit: 12 * 1024 * 1024,
    answers: { 202: z.object({ turn: chatTurnSchema }) },
  }),
  /**
   * Takes back `turnId` and every later turn: marked `rewoundAt` and left out of later context;
   * with `code`, the branch and worktree go back too (the old state kept under a backup ref).
   * 409 while a turn of the session is unfinished.
   */
  rewind: defineRoute({
    method: "POST",
    path: "/api/sessions/:id/rewind",
    caller: "user",
    params: sessionParams,
    body: rewindBodySchema,
    subject: "rewind",
    answers: {
      200: z.object({
        session: chatSessionSchema,
        rewound: z.array(z.string()),
        code: sessionRewindResultSchema.nullable(),
      }),
    },
  }),
  /** A new session whose context is this one's turns up to `turnId`, its branch from that turn's commit. */
  fork: defineRoute({
    method: "POST",
    path: "/api/sessions/:id/fork",
    caller: "user",
    params: sessionParams,
    body: forkBodySchema,
    subject: "fork",
    answers: { 201: z.object({ session: chatSessionSchema }) },
  }),
  turns: defineRoute({
    method: "GET",
    path: "/api/sessions/:id/turns",
    caller: "user",
    params: sessionParams,
    query: pageQuerySchema,
    answers: { 200: listAnswer("turns", chatTurnSchema) },
  }),
};
