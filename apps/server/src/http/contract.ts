// Serving the REST contract of @gadget/protocol (`rest`): fastify checks each route's params, query
// and body with the contract's zod schemas and types its handler by them (decision 0038).
import type { IncomingMessage, ServerResponse } from "node:http";
import {
  type GadgetError,
  type RouteCaller,
  type RouteContract,
  restRoutes,
  SystemError,
  UserError,
  validationError,
} from "@gadget/protocol";
import type {
  ContextConfigDefault,
  FastifyBaseLogger,
  FastifyInstance,
  RawServerDefault,
  RouteGenericInterface,
  RouteHandlerMethod,
  RouteShorthandOptions,
} from "fastify";
import {
  hasZodFastifySchemaValidationErrors,
  validatorCompiler,
  type ZodTypeProvider,
} from "fastify-type-provider-zod";
import type { z } from "zod";

/** A fastify instance whose routes are typed by their zod schemas. */
export type ContractApp = FastifyInstance<
  RawServerDefault,
  IncomingMessage,
  ServerResponse,
  FastifyBaseLogger,
  ZodTypeProvider
>;

declare module "fastify" {
  interface FastifyContextConfig {
    /** The contract's route a route serves (absent for the web app's files). */
    contract?: RouteContract;
  }
}

type SchemaOf<Route, Key extends string> = Route extends {
  [K in Key]: infer Schema extends z.ZodType;
}
  ? Schema
  : undefined;

/** The `schema` of a served route: the contract's schemas, under fastify's names. */
type ServedSchema<Route extends RouteContract> = {
  params: SchemaOf<Route, "params">;
  querystring: SchemaOf<Route, "query">;
  body: SchemaOf<Route, "body">;
  response: Route["answers"];
};

/** A handler of `route`: its params, query and body as the contract parsed them, its answer typed. */
export type ServedHandler<Route extends RouteContract> = RouteHandlerMethod<
  RawServerDefault,
  IncomingMessage,
  ServerResponse,
  RouteGenericInterface,
  ContextConfigDefault,
  ServedSchema<Route>,
  ZodTypeProvider
>;

/** What a route may add: hooks of its own (`preValidation`), `config`. */
export type ServedOptions<Route extends RouteContract> = Omit<
  RouteShorthandOptions<
    RawServerDefault,
    IncomingMessage,
    ServerResponse,
    RouteGenericInterface,
    ContextConfigDefault,
    ServedSchema<Route>,
    ZodTypeProvider
  >,
  "schema" | "bodyLimit"
>;

/**
 * Serves one route of the contract: fastify checks its params, query and body with the contract's
 * schemas before `handler` runs, with the contract's body limit.
 * @example serve(app, rest.projects.list, async (request) => ({ projects: [], nextCursor: null }));
 */
export function serve<Route extends RouteContract>(
  app: ContractApp,
  route: Route,
  handler: ServedHandler<Route>,
  options: ServedOptions<Route> = {},
): void {
  const schema = {
    ...(route.params ? { params: route.params } : {}),
    ...(route.query ? { querystring: route.query } : {}),
    ...(route.body ? { body: route.body } : {}),
    response: route.answers,
  } as ServedSchema<Route>;
  app.route<RouteGenericInterface, ContextConfigDefault, ServedSchema<Route>>({
    ...options,
    method: route.method,
    url: route.path,
    schema,
    ...(route.bodyLimit ? { bodyLimit: route.bodyLimit } : {}),
    config: { ...options.config, contract: route },
    handler,
  });
}

/**
 * Makes `app` check requests with the contract's schemas. Answers are typed by the contract but
 * not checked: they are serialized as before, with JSON.stringify.
 */
export function useContract(app: FastifyInstance): void {
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  const served = new Set<RouteContract>();
  app.addHook("onRoute", (options) => {
    const contract = options.config?.contract;
    if (!contract || options.method === "HEAD") return;
    if (served.has(contract)) {
      throw new SystemError("internal", `${contract.method} ${contract.path} is served twice`);
    }
    served.add(contract);
  });
  app.addHook("onReady", async () => {
    const missing = restRoutes.filter((route) => !served.has(route));
    if (missing.length > 0) {
      const names = missing.map((route) => `${route.method} ${route.path}`).join(", ");
      throw new SystemError("internal", `The REST contract's ${names} has no handler`);
    }
  });
}

/** Refuses, when the app starts, a route of `scope` whose contract names another caller. */
export function admitOnly(scope: FastifyInstance, callers: readonly RouteCaller[]): void {
  scope.addHook("onRoute", (options) => {
    const caller = options.config?.contract?.caller;
    if (!caller || !callers.includes(caller)) {
      throw new SystemError(
        "internal",
        `${options.method} ${options.url} is for ${caller ?? "no caller of the contract"}, and this scope admits ${callers.join(", ")}`,
      );
    }
  });
}

/**
 * What a request the contract's schemas refused answers: 404 for a path id that does not parse
 * (an id of the wrong shape is simply not found), else 400 naming every field. Null for other errors.
 */
export function contractError(
  error: unknown,
  route: RouteContract | undefined,
): GadgetError | null {
  if (!hasZodFastifySchemaValidationErrors(error)) return null;
  const issues = error.validation.map((issue) => ({
    path: issue.instancePath.slice(1).split("/").join(".") || "(root)",
    message: issue.message ?? "is invalid",
  }));
  switch (error.validationContext) {
    case "params":
      return new UserError("not_found", issues[0]?.message ?? "Not found");
    case "querystring":
      return validationError(issues, "query");
    default:
      return validationError(issues, route?.subject ?? "body");
  }
}
