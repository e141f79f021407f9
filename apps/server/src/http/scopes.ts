// The two scopes routes are served in: the open one (probes, signup and login, what a drone calls
// with its registration token or credential) and the one a signed-in user calls, whose onRequest
// hook checks the bearer token before anything else, so a stranger's body is never read.
import { SystemError } from "@gadget/protocol";
import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { requireUser } from "../auth/authenticate.ts";
import type { SignIns } from "../auth/sign-ins.ts";
import { admitOnly, type ContractApp } from "./contract.ts";

declare module "fastify" {
  interface FastifyRequest {
    /** Who made the request, once authenticated (also for the request's log line). */
    userId?: string;
    /** A route authenticating beside its first reads: the check, still running. */
    authentication?: Promise<string>;
  }
  interface FastifyContextConfig {
    /**
     * The handler awaits `request.authentication` itself, beside its first database reads (one
     * round less on a hot path); the error edge awaits it too, so a stranger still hears 401.
     */
    authenticateBeside?: true;
  }
}

/** Routes anyone may call: each proves itself, if at all, in its own way. */
export function openScope(routes: (app: ContractApp) => void): FastifyPluginAsync {
  return async (app) => {
    admitOnly(app, ["anyone", "drone"]);
    routes(app.withTypeProvider<ZodTypeProvider>());
  };
}

/** Routes a signed-in user calls (`Authorization: Bearer <token>`); 401 before anything else. */
export function userScope(
  dependencies: { signIns: SignIns },
  routes: (app: ContractApp) => void,
): FastifyPluginAsync {
  return async (app) => {
    admitOnly(app, ["user"]);
    app.addHook("onRequest", async (request) => {
      const authentication = requireUser(dependencies, request);
      if (!request.routeOptions.config.authenticateBeside) {
        await authentication;
        return;
      }
      // Awaited by the handler, or by the error edge when the request fails before it.
      authentication.catch(() => undefined);
      request.authentication = authentication;
    });
    routes(app.withTypeProvider<ZodTypeProvider>());
  };
}

/** The signed-in user of a request served in the user scope. */
export function userOf(request: FastifyRequest): string {
  if (!request.userId) {
    throw new SystemError("internal", `${request.url} was served outside the user scope`);
  }
  return request.userId;
}

/** The user of a route that authenticates beside its first reads (`authenticateBeside`). */
export function pendingUserOf(request: FastifyRequest): Promise<string> {
  return request.authentication ?? Promise.resolve().then(() => userOf(request));
}

/** Why a route authenticating beside its reads refused its caller, if it did. */
export async function authenticationFailure(request: FastifyRequest): Promise<unknown> {
  return request.authentication?.then(
    () => undefined,
    (reason: unknown) => reason,
  );
}
