// Turns: the user's turns across projects (the Activity page) and their summary; one turn read,
// its events paged or streamed, cancelled, its approvals decided, resumed, reverted.
import { z } from "zod";
import { turnListAnswerSchema, turnListQuerySchema, turnSummarySchema } from "../activity.ts";
import { approvalDecisionBodySchema, eventsQuerySchema } from "../api.ts";
import { turnEventSchema } from "../events.ts";
import {
  editTurnBodySchema,
  postTurnMessageBodySchema,
  steeringMessageSchema,
} from "../steering.ts";
import { chatTurnSchema, turnRevertAnswerSchema } from "../turn.ts";
import { defineRoute, idParams, pathId } from "./route.ts";

const turnParams = idParams("Turn");
const turnAnswer = z.object({ turn: chatTurnSchema });

export const turnRoutes = {
  /** Newest first, filtered by status, project and drone; `cursor` is the page before's `nextCursor`. */
  list: defineRoute({
    method: "GET",
    path: "/api/turns",
    caller: "user",
    query: turnListQuerySchema,
    answers: { 200: turnListAnswerSchema },
  }),
  /** How many of the user's turns run, wait on them, or wait for a drone. */
  summary: defineRoute({
    method: "GET",
    path: "/api/turns/summary",
    caller: "user",
    answers: { 200: turnSummarySchema },
  }),
  get: defineRoute({
    method: "GET",
    path: "/api/turns/:id",
    caller: "user",
    params: turnParams,
    answers: { 200: turnAnswer },
  }),
  /** One image sent with the turn's prompt: its bytes, with its type (decision 0051). */
  image: defineRoute({
    method: "GET",
    path: "/api/turns/:id/images/:imageId",
    caller: "user",
    params: z.object({ id: pathId("Turn"), imageId: pathId("Image") }),
    /** The image's bytes. */
    answers: { 200: z.unknown() },
  }),
  /** A queued turn's prompt, while it waits for the session's earlier turns (409 once started). */
  edit: defineRoute({
    method: "PATCH",
    path: "/api/turns/:id",
    caller: "user",
    params: turnParams,
    body: editTurnBodySchema,
    subject: "turn",
    answers: { 200: turnAnswer },
  }),
  /**
   * A message to a queued or running turn (steering): taken by the model before its next call,
   * or at once with `interrupt`; 409 for a finished turn.
   */
  postMessage: defineRoute({
    method: "POST",
    path: "/api/turns/:id/messages",
    caller: "user",
    params: turnParams,
    body: postTurnMessageBodySchema,
    subject: "message",
    answers: { 202: z.object({ message: steeringMessageSchema }) },
  }),
  /** The turn's messages, oldest first, and what became of each. */
  messages: defineRoute({
    method: "GET",
    path: "/api/turns/:id/messages",
    caller: "user",
    params: turnParams,
    answers: { 200: z.object({ messages: z.array(steeringMessageSchema) }) },
  }),
  /** Stored events after seq `after`, oldest first. */
  events: defineRoute({
    method: "GET",
    path: "/api/turns/:id/events",
    caller: "user",
    params: turnParams,
    query: eventsQuerySchema,
    answers: { 200: z.object({ events: z.array(turnEventSchema) }) },
  }),
  /** Server-Sent Events after `Last-Event-ID` (or `?after=`), live, until the turn is done. */
  stream: defineRoute({
    method: "GET",
    path: "/api/turns/:id/stream",
    caller: "user",
    params: turnParams,
    query: z.object({ after: z.string().optional() }),
    answers: { 200: turnEventSchema },
    stream: true,
  }),
  cancel: defineRoute({
    method: "POST",
    path: "/api/turns/:id/cancel",
    caller: "user",
    params: turnParams,
    answers: { 202: turnAnswer },
  }),
  /** 503 `no_drone_online` while the turn's drone is away. */
  decide: defineRoute({
    method: "POST",
    path: "/api/turns/:id/approvals/:approvalId",
    caller: "user",
    params: turnParams.extend({ approvalId: z.string() }),
    body: approvalDecisionBodySchema,
    subject: "approval decision",
    answers: { 200: z.object({ ok: z.literal(true), turn: chatTurnSchema }) },
  }),
  /** An `interrupted` or `failed` turn goes on from its stored state (409 otherwise). */
  resume: defineRoute({
    method: "POST",
    path: "/api/turns/:id/resume",
    caller: "user",
    params: turnParams,
    answers: { 202: turnAnswer },
  }),
  /** 202 with the revert commit; 200 with `revert: null` when the turn changed no files. */
  revert: defineRoute({
    method: "POST",
    path: "/api/turns/:id/revert",
    caller: "user",
    params: turnParams,
    answers: { 200: turnRevertAnswerSchema, 202: turnRevertAnswerSchema },
  }),
};
