// Liveness, readiness and the Prometheus metrics: for probes and scrapers, outside /api.
import { z } from "zod";
import { defineRoute } from "./route.ts";

/** What `/readyz` checked: MongoDB and Redis answer, and the server is not shutting down. */
export const readinessSchema = z.object({
  ok: z.boolean(),
  checks: z.object({ mongo: z.boolean(), redis: z.boolean(), accepting: z.boolean() }),
});
export type Readiness = z.infer<typeof readinessSchema>;

export const healthRoutes = {
  live: defineRoute({
    method: "GET",
    path: "/healthz",
    caller: "anyone",
    answers: { 200: z.object({ ok: z.literal(true) }) },
  }),
  /** 503 with the same body while a check fails. */
  ready: defineRoute({
    method: "GET",
    path: "/readyz",
    caller: "anyone",
    answers: { 200: readinessSchema, 503: readinessSchema },
  }),
  /** Prometheus text, not JSON. */
  metrics: defineRoute({
    method: "GET",
    path: "/metrics",
    caller: "anyone",
    answers: { 200: z.string() },
  }),
};
