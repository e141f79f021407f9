// Liveness, readiness (MongoDB + Redis answer, not shutting down) and Prometheus metrics.
import type { Models } from "@gadget/db";
import { rest } from "@gadget/protocol";
import type { Lifecycle } from "../../lifecycle.ts";
import type { Metrics } from "../../metrics/metrics.ts";
import type { RedisClient } from "../../redis/connections.ts";
import { type ContractApp, serve } from "../contract.ts";

export interface HealthRouteDependencies {
  models: Models;
  redis: RedisClient;
  metrics: Metrics;
  lifecycle: Lifecycle;
}

export function healthRoutes(app: ContractApp, dependencies: HealthRouteDependencies): void {
  serve(app, rest.health.live, async () => ({ ok: true as const }));

  serve(app, rest.health.ready, async (_request, reply) => {
    const checks = { mongo: false, redis: false, accepting: dependencies.lifecycle.accepting };
    await Promise.all([
      dependencies.models.User.db
        .db!.admin()
        .ping()
        .then(() => {
          checks.mongo = true;
        })
        .catch(() => undefined),
      dependencies.redis
        .ping()
        .then(() => {
          checks.redis = true;
        })
        .catch(() => undefined),
    ]);
    const ready = checks.mongo && checks.redis && checks.accepting;
    return reply.status(ready ? 200 : 503).send({ ok: ready, checks });
  });

  serve(app, rest.health.metrics, async (_request, reply) => {
    reply.header("content-type", dependencies.metrics.registry.contentType);
    return dependencies.metrics.registry.metrics();
  });
}
