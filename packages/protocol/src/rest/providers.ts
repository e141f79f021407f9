// OpenAI-compatible providers: the API key goes in and never comes out; checks ask the provider
// through one of the user's drones (or the server), 30 a minute per user.
import { z } from "zod";
import { pageQuerySchema } from "../api.ts";
import {
  createProviderBodySchema,
  providerCheckBodySchema,
  providerCheckResultSchema,
  providerSchema,
  updateProviderBodySchema,
} from "../api-providers.ts";
import { defineRoute, idParams, listAnswer, noContent, optionalBody } from "./route.ts";

const providerAnswer = z.object({ provider: providerSchema });

export const providerRoutes = {
  create: defineRoute({
    method: "POST",
    path: "/api/providers",
    caller: "user",
    body: createProviderBodySchema,
    subject: "provider",
    answers: { 201: providerAnswer },
  }),
  list: defineRoute({
    method: "GET",
    path: "/api/providers",
    caller: "user",
    query: pageQuerySchema,
    answers: { 200: listAnswer("providers", providerSchema) },
  }),
  /** Any field; a new apiKey replaces the stored one, a new baseUrl or model forgets its quirks. */
  update: defineRoute({
    method: "PATCH",
    path: "/api/providers/:id",
    caller: "user",
    params: idParams("Provider"),
    body: optionalBody(updateProviderBodySchema),
    subject: "provider",
    answers: { 200: providerAnswer },
  }),
  /** 409 while a queued or running turn uses it. */
  remove: defineRoute({
    method: "DELETE",
    path: "/api/providers/:id",
    caller: "user",
    params: idParams("Provider"),
    answers: { 204: noContent },
  }),
  /** Lists the models of a provider not saved yet (browsers cannot call providers: CORS). */
  check: defineRoute({
    method: "POST",
    path: "/api/providers/check",
    caller: "user",
    body: providerCheckBodySchema,
    subject: "provider check",
    answers: { 200: providerCheckResultSchema },
  }),
  /** A saved provider: its models, then one small streamed call offering one tool (the probe). */
  checkSaved: defineRoute({
    method: "POST",
    path: "/api/providers/:id/check",
    caller: "user",
    params: idParams("Provider"),
    answers: { 200: providerCheckResultSchema },
  }),
  /** Forgets what turns learned the provider refuses; the next turn sends the plain request. */
  forgetQuirks: defineRoute({
    method: "DELETE",
    path: "/api/providers/:id/quirks",
    caller: "user",
    params: idParams("Provider"),
    answers: { 200: providerAnswer },
  }),
};
