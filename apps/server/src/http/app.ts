// The HTTP edge: one Fastify app whose every error becomes `{"error":{"code","message","details"}}`.
import { randomBytes } from "node:crypto";
import type { Logger } from "@gadget/logging";
import { type ErrorCode, GadgetError, toGadgetError, UserError } from "@gadget/protocol";
import Fastify, { type FastifyInstance, type FastifyRequest } from "fastify";
import type { ResolvedConfig } from "../config.ts";
import { type StorageHealth, unavailableError } from "../storage/health.ts";
import type { SessionRewinds } from "../turns/session-rewinds.ts";
import type { TurnService } from "../turns/turn-service.ts";
import { contractError, useContract } from "./contract.ts";
import { keepRawBody } from "./raw-body.ts";
import { type ActivityRouteDependencies, activityRoutes } from "./routes/activity.ts";
import { type AuthRouteDependencies, accountRoutes, signInRoutes } from "./routes/auth.ts";
import { type DeliveryRouteDependencies, deliveryRoutes } from "./routes/deliveries.ts";
import { type DownloadRouteDependencies, downloadRoutes } from "./routes/downloads.ts";
import { type DroneRouteDependencies, droneRoutes, droneSelfRoutes } from "./routes/drones.ts";
import { type FileRouteDependencies, fileRoutes } from "./routes/files.ts";
import {
  type ForgeEventRouteDependencies,
  forgeEventRoutes,
  forgeHookRoutes,
} from "./routes/forge-events.ts";
import { type HealthRouteDependencies, healthRoutes } from "./routes/health.ts";
import { type ProjectRouteDependencies, projectRoutes } from "./routes/projects.ts";
import { type ProviderRouteDependencies, providerRoutes } from "./routes/providers.ts";
import { rewindRoutes } from "./routes/rewinds.ts";
import { type SessionRouteDependencies, sessionRoutes } from "./routes/sessions.ts";
import { type TurnRouteDependencies, turnRoutes } from "./routes/turns.ts";
import { type WebhookRouteDependencies, webhookRoutes } from "./routes/webhooks.ts";
import { authenticationFailure, openScope, userScope } from "./scopes.ts";
import { registerWebApp } from "./web.ts";

const statusCodes: Record<number, ErrorCode> = {
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
export function httpError(error: unknown, request?: FastifyRequest): GadgetError {
  if (error instanceof GadgetError) return error;
  const refused = contractError(error, request?.routeOptions.config.contract);
  if (refused) return refused;
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

/** What the routes use, each route naming its own part. */
export type HttpDependencies = ActivityRouteDependencies &
  HealthRouteDependencies &
  AuthRouteDependencies &
  DeliveryRouteDependencies &
  DownloadRouteDependencies &
  DroneRouteDependencies &
  FileRouteDependencies &
  ForgeEventRouteDependencies &
  ProjectRouteDependencies &
  ProviderRouteDependencies &
  SessionRouteDependencies &
  TurnRouteDependencies &
  WebhookRouteDependencies & {
    config: ResolvedConfig;
    logger: Logger;
    health: StorageHealth;
    rewinds: SessionRewinds;
  };

export function createHttpApp(dependencies: HttpDependencies, turns: TurnService): FastifyInstance {
  const app = Fastify({
    logger: false,
    bodyLimit: dependencies.config.bodyLimitBytes,
    // Socket.IO handles its own path on the same server.
    return503OnClosing: true,
    trustProxy: dependencies.config.trustProxy,
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
    if (quietPaths.test(path)) dependencies.logger.debug(line, "request");
    else dependencies.logger.info(line, "request");
  });

  // An empty JSON body (e.g. POST /cancel with a content type) reads as {}.
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    const text = String(body);
    // A forge signs the bytes it sent: its webhook keeps them.
    keepRawBody(request, text);
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

  app.setErrorHandler(async (failure, request, reply) => {
    // A route authenticating beside its first reads still answers a stranger 401 first.
    const error = (await authenticationFailure(request)) ?? failure;
    // An outage of the database or Redis answers 503 `unavailable`, logged once per outage.
    const down = dependencies.health.failed(error);
    const problem = down ? unavailableError(down, error) : httpError(error, request);
    if (down) reply.header("retry-after", "2");
    if (problem.status >= 500 && !down) {
      dependencies.logger.error(
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
    return reply.status(problem.status).send(problem.toJSON());
  });
  useContract(app);
  app.register(
    openScope((open) => {
      healthRoutes(open, dependencies);
      accountRoutes(open, dependencies);
      droneSelfRoutes(open, dependencies, turns);
      downloadRoutes(open, dependencies);
      forgeHookRoutes(open, dependencies);
    }),
  );
  app.register(
    userScope(dependencies, (user) => {
      signInRoutes(user, dependencies);
      droneRoutes(user, dependencies, turns);
      providerRoutes(user, dependencies);
      projectRoutes(user, dependencies);
      activityRoutes(user, dependencies);
      turnRoutes(user, dependencies, turns);
      fileRoutes(user, dependencies);
      deliveryRoutes(user, dependencies);
      sessionRoutes(user, dependencies);
      rewindRoutes(user, dependencies.rewinds);
      webhookRoutes(user, dependencies);
      forgeEventRoutes(user, dependencies);
    }),
  );
  registerWebApp(app, dependencies.config.webDir);
  return app;
}
