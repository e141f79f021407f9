// Drones: registration tokens, registering (the token is the proof), the fleet, renaming and
// labelling, revoking; and the two routes a drone calls with its own credential.
import { z } from "zod";
import {
  createRegistrationTokenBodySchema,
  droneSchema,
  pageQuerySchema,
  registerDroneBodySchema,
  registerDroneResponseSchema,
  registrationTokenResponseSchema,
  updateDroneBodySchema,
} from "../api.ts";
import { dateSchema } from "../common.ts";
import { defineRoute, idParams, listAnswer, noContent, optionalBody } from "./route.ts";

/** A registration token as listed: its id is the token's hash; the token itself is never shown again. */
export const registrationTokenSchema = z.object({
  _id: z.string(),
  reusable: z.boolean(),
  labels: z.array(z.string()),
  expiresAt: dateSchema,
  createdAt: dateSchema.optional(),
});
export type RegistrationToken = z.infer<typeof registrationTokenSchema>;

/** `GET /api/drones/registration-tokens/:id`: whether a drone registered with it, and which. */
export const registrationTokenStatusSchema = z.object({
  used: z.boolean(),
  drone: z
    .object({ _id: z.string(), name: z.string(), status: droneSchema.shape.status })
    .optional(),
});
export type RegistrationTokenStatus = z.infer<typeof registrationTokenStatusSchema>;

const hashParams = z.object({
  id: z.string().regex(/^[0-9a-f]{64}$/, "Registration token not found"),
});

const droneAnswer = z.object({ drone: droneSchema });

export const droneRoutes = {
  /** The token is in the answer this once, with the `gadget-drone register` command and the install line. */
  createRegistrationToken: defineRoute({
    method: "POST",
    path: "/api/drones/registration-tokens",
    caller: "user",
    body: optionalBody(createRegistrationTokenBodySchema),
    subject: "registration token",
    answers: {
      201: registrationTokenResponseSchema.extend({ registrationToken: registrationTokenSchema }),
    },
  }),
  /** The user's reusable tokens still in force (a fleet's). */
  registrationTokens: defineRoute({
    method: "GET",
    path: "/api/drones/registration-tokens",
    caller: "user",
    answers: { 200: z.object({ registrationTokens: z.array(registrationTokenSchema) }) },
  }),
  /** Whether a drone registered with the token yet (the Add a drone panel follows it). */
  registrationTokenStatus: defineRoute({
    method: "GET",
    path: "/api/drones/registration-tokens/:id",
    caller: "user",
    params: hashParams,
    answers: { 200: registrationTokenStatusSchema },
  }),
  /** No drone registers with it any more; the drones it registered stay. */
  revokeRegistrationToken: defineRoute({
    method: "DELETE",
    path: "/api/drones/registration-tokens/:id",
    caller: "user",
    params: hashParams,
    answers: { 204: noContent },
  }),
  /**
   * The registration token is the proof: in the body, or as `Authorization: Bearer <token>`.
   * The credential is in the answer this once.
   */
  register: defineRoute({
    method: "POST",
    path: "/api/drones/register",
    caller: "anyone",
    body: registerDroneBodySchema,
    subject: "registration",
    answers: { 201: registerDroneResponseSchema },
  }),
  list: defineRoute({
    method: "GET",
    path: "/api/drones",
    caller: "user",
    query: pageQuerySchema,
    answers: { 200: listAnswer("drones", droneSchema) },
  }),
  /** Its name or its labels; queued turns waiting for labels are tried again at once. */
  update: defineRoute({
    method: "PATCH",
    path: "/api/drones/:id",
    caller: "user",
    params: idParams("Drone"),
    body: optionalBody(updateDroneBodySchema),
    subject: "drone",
    answers: { 200: droneAnswer },
  }),
  /** The credential stops working, a connected drone is disconnected, its turns interrupted. */
  revoke: defineRoute({
    method: "DELETE",
    path: "/api/drones/:id",
    caller: "user",
    params: idParams("Drone"),
    answers: { 204: noContent },
  }),
  /** A refused drone asks whether its credential still works (403 once revoked). */
  self: defineRoute({
    method: "GET",
    path: "/api/drones/self",
    caller: "drone",
    answers: { 200: droneAnswer },
  }),
  /** `gadget-drone unregister`: the drone revokes itself. */
  unregisterSelf: defineRoute({
    method: "DELETE",
    path: "/api/drones/self",
    caller: "drone",
    answers: { 204: noContent },
  }),
};
