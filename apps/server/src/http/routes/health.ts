// Liveness, readiness (MongoDB + Redis answer, not shutting down) and Prometheus metrics.
import type { FastifyPluginAsync } from "fastify";
import type { ServerContext } from "../../context.ts";

export function healthRoutes(context: ServerContext): FastifyPluginAsync {
  return async (app) => {
    app.get("/healthz", async () => ({ ok: true }));
    app.get("/readyz", async (_request, reply) => {
      const checks = { mongo: false, redis: false, accepting: context.accepting };
      await Promise.all([
        context.models.User.db
          .db!.admin()
          .ping()
          .then(() => {
            checks.mongo = true;
          })
          .catch(() => undefined),
        context.redis
          .ping()
          .then(() => {
            checks.redis = true;
          })
          .catch(() => undefined),
      ]);
      const ready = checks.mongo && checks.redis && checks.accepting;
      reply.status(ready ? 200 : 503).send({ ok: ready, checks });
    });
    app.get("/metrics", async (_request, reply) => {
      reply.header("content-type", context.metrics.registry.contentType);
      return context.metrics.registry.metrics();
    });
  };
}
