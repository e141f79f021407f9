// The HTTP edge: one Fastify app whose every error becomes `{"error":{"code","message","details"}}`.
import { randomBytes } from "node:crypto";
import { GadgetError, toGadgetError, UserError } from "@gadget/protocol";
import Fastify, { type FastifyInstance } from "fastify";
import type { ServerContext } from "../context.ts";
import type { TurnService } from "../turns/turn-service.ts";
import { authRoutes } from "./routes/auth.ts";
import { droneRoutes } from "./routes/drones.ts";
import { fileRoutes } from "./routes/files.ts";
import { healthRoutes } from "./routes/health.ts";
import { projectRoutes } from "./routes/projects.ts";
import { providerRoutes } from "./routes/providers.ts";
import { turnRoutes } from "./routes/turns.ts";
import { registerWebApp } from "./web.ts";

const statusCodes: Record<number, string> = {
  400: "validation_failed",
  401: "unauthorized",
  403: "forbidden",
  404: "not_found",
  409: "conflict",
  413: "payload_too_large",
  415: "validation_failed",
  429: "rate_limited",
};

/** Maps anything thrown in a route to a GadgetError. */
export function httpError(error: unknown): GadgetError {
  if (error instanceof GadgetError) return error;
  const fastifyError = error as { statusCode?: number; code?: string; message?: string };
  const status = fastifyError.statusCode;
  if (status && status >= 400 && status < 500) {
    if (status === 413) {
      return new UserError("payload_too_large", "Request body is too large");
    }
    return new UserError(
      statusCodes[status] ?? "validation_failed",
      fastifyError.message ?? "Bad request",
    );
  }
  return toGadgetError(error);
}

/** A caller's `x-request-id` is kept when it is a sane token, so a proxy's id follows the request. */
const requestIdPattern = /^[\w.:-]{1,100}$/;
/** Probes and static files are logged at debug: they would drown the API lines. */
const quietPaths = /^\/(healthz|readyz|metrics)$|^\/(?!api\/)/;

declare module "fastify" {
  interface FastifyRequest {
    /** Set by requireUser: who made the request, for the request's log line. */
    userId?: string;
  }
}

export function createHttpApp(context: ServerContext, turns: TurnService): FastifyInstance {
  const app = Fastify({
    logger: false,
    bodyLimit: context.config.bodyLimitBytes,
    // Socket.IO handles its own path on the same server.
    return503OnClosing: true,
    trustProxy: context.config.trustProxy,
    genReqId: (request) => {
      const given = request.headers["x-request-id"];
      return typeof given === "string" && requestIdPattern.test(given)
        ? given
        : randomBytes(8).toString("hex");
    },
  });

  // One line per request, with the id the caller can quote (it is in every answer's headers).
  app.addHook("onRequest", async (request, reply) => {
    reply.header("x-request-id", request.id);
  });
  app.addHook("onResponse", async (request, reply) => {
    const path = request.url.split("?")[0] ?? "";
    const line = {
      requestId: request.id,
      method: request.method,
      path,
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime),
      ...(request.userId ? { userId: request.userId } : {}),
    };
    if (quietPaths.test(path)) context.logger.debug(line, "request");
    else context.logger.info(line, "request");
  });

  // An empty JSON body (e.g. POST /cancel with a content type) reads as {}.
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (_request, body, done) => {
    const text = String(body);
    if (text.trim() === "") {
      done(null, {});
      return;
    }
    try {
      done(null, JSON.parse(text));
    } catch {
      done(new UserError("validation_failed", "Body is not valid JSON"), undefined);
    }
  });

  app.setErrorHandler((error, request, reply) => {
    const problem = httpError(error);
    if (problem.status >= 500) {
      context.logger.error(
        {
          err: error,
          requestId: request.id,
          method: request.method,
          path: request.url.split("?")[0],
        },
        "request failed",
      );
    }
    const details = problem.details as { retryAfterSeconds?: number } | undefined;
    if (problem.code === "rate_limited" && details?.retryAfterSeconds) {
      reply.header("retry-after", String(details.retryAfterSeconds));
    }
    reply.status(problem.status).send(problem.toJSON());
  });
  app.register(healthRoutes(context));
  app.register(authRoutes(context), { prefix: "/api" });
  app.register(droneRoutes(context, turns), { prefix: "/api" });
  app.register(providerRoutes(context), { prefix: "/api" });
  app.register(projectRoutes(context), { prefix: "/api" });
  app.register(turnRoutes(context, turns), { prefix: "/api" });
  app.register(fileRoutes(context), { prefix: "/api" });
  registerWebApp(app, context.config.webDir);
  return app;
}
