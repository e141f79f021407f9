// Accounts: signup and login (anyone), logout, the user's sign-ins and who is signed in.
import { z } from "zod";
import {
  authResponseSchema,
  loginBodySchema,
  signInSchema,
  signupBodySchema,
  userSchema,
} from "../api.ts";
import { defineRoute, noContent } from "./route.ts";

/** Bodies here are a few fields: anything larger is refused before it is parsed. */
const accountBodyLimit = 16 * 1024;

export const accountRoutes = {
  /** 403 when signup is closed; the same `signup_failed` for a taken email or a bad invite. */
  signup: defineRoute({
    method: "POST",
    path: "/api/auth/signup",
    caller: "anyone",
    body: signupBodySchema,
    subject: "signup",
    bodyLimit: accountBodyLimit,
    answers: { 201: authResponseSchema },
  }),
  /** 401 on a wrong pair; 429 when slowed (per account and address). */
  login: defineRoute({
    method: "POST",
    path: "/api/auth/login",
    caller: "anyone",
    body: loginBodySchema,
    subject: "login",
    bodyLimit: accountBodyLimit,
    answers: { 200: authResponseSchema },
  }),
  /** Ends this sign-in: the token stops working and its sockets close. */
  logout: defineRoute({
    method: "POST",
    path: "/api/auth/logout",
    caller: "user",
    answers: { 204: noContent },
  }),
  /** The user's sign-ins, newest first; `current` is the one asking. Never the tokens. */
  signIns: defineRoute({
    method: "GET",
    path: "/api/auth/sign-ins",
    caller: "user",
    answers: { 200: z.object({ signIns: z.array(signInSchema) }) },
  }),
  revokeSignIn: defineRoute({
    method: "DELETE",
    path: "/api/auth/sign-ins/:id",
    caller: "user",
    params: z.object({ id: z.string().regex(/^[0-9a-f]{64}$/, "Sign-in not found") }),
    answers: { 204: noContent },
  }),
  me: defineRoute({
    method: "GET",
    path: "/api/me",
    caller: "user",
    answers: { 200: z.object({ user: userSchema }) },
  }),
};
