// One REST route declared once: its method, path, caller, and the zod schemas of its params, query,
// body and answers. The server serves it with these schemas; the web app and the tests call it.
import { z } from "zod";
import { SystemError } from "../errors.ts";

export type HttpMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/**
 * Who may call a route: `user` needs `Authorization: Bearer <token>` (checked before the body is
 * read); `drone` needs `Authorization: Drone <id>:<credential>`; `anyone` proves itself, if at all,
 * in its body (a password, a registration token).
 */
export type RouteCaller = "anyone" | "user" | "drone";

export interface RouteContract {
  method: HttpMethod;
  /** The whole path, with `:name` where a param goes. */
  path: string;
  caller: RouteCaller;
  /** One schema per `:name`; an id that does not parse answers 404 with the schema's message. */
  params?: z.ZodType;
  query?: z.ZodType;
  body?: z.ZodType;
  /** Names the body in validation messages: `Invalid <subject>: <path>: <problem>`. */
  subject?: string;
  /** The largest body accepted, in bytes (413 beyond it); the server's default when absent. */
  bodyLimit?: number;
  /** The answer of each status the route answers by itself (`noContent` for 204); errors aside. */
  answers: { [status: number]: z.ZodType };
  /** The 200 answer is a Server-Sent Events stream, each event's `data` one `answers[200]`. */
  stream?: true;
}

/** The answer of a 204. */
export const noContent = z.undefined();

/**
 * A 24-hex id in a path, lower-cased as stored ids print; anything else is simply not found
 * (never a 400 that leaks shape).
 */
export function pathId(what: string) {
  return z
    .string()
    .regex(/^[0-9a-f]{24}$/i, `${what} not found`)
    .transform((id) => id.toLowerCase());
}

/** `{id}` of a path such as `/api/projects/:id`. */
export function idParams(what: string) {
  return z.object({ id: pathId(what) });
}

/**
 * Declares a route; the literal types are kept, so clients know its path, input and answers.
 * @example export const me = defineRoute({ method: "GET", path: "/api/me", caller: "user", answers: { 200: z.object({ user: userSchema }) } });
 */
export function defineRoute<const Route extends RouteContract>(route: Route): Route {
  return route;
}

/** A body that may be left out (an empty PATCH, a POST without one): the schema sees `{}`. */
export function optionalBody<Schema extends z.ZodType<object>>(
  schema: Schema,
): z.ZodType<z.output<Schema>, z.input<Schema> | undefined> {
  // A request without a body reads as null or undefined, depending on its content type.
  return z.preprocess((body) => body ?? {}, schema);
}

/**
 * A page of a list route: the items under their own key and where the next page starts (`null`
 * on the last), after `?cursor=&limit=` (`pageQuerySchema`).
 */
export function listAnswer<Key extends string, Item extends z.ZodType>(key: Key, item: Item) {
  const shape = { [key]: z.array(item), nextCursor: z.string().nullable() };
  return z.object(
    shape as { [K in Key]: z.ZodArray<Item> } & { nextCursor: z.ZodNullable<z.ZodString> },
  );
}

type Field<Route, Key extends string> = Route extends { [K in Key]: infer Schema extends z.ZodType }
  ? Schema
  : never;

/** What a caller gives: `params` for a path with `:name`s, `query`, `body` (optional when the route allows none). */
export type RouteInput<Route extends RouteContract> = ([Field<Route, "params">] extends [never]
  ? { params?: never }
  : { params: z.input<Field<Route, "params">> }) &
  ([Field<Route, "query">] extends [never]
    ? { query?: never }
    : { query?: z.input<Field<Route, "query">> }) &
  ([Field<Route, "body">] extends [never]
    ? { body?: never }
    : undefined extends z.input<Field<Route, "body">>
      ? { body?: z.input<Field<Route, "body">> }
      : { body: z.input<Field<Route, "body">> });

/** The answer of a route's success statuses (dates as the protocol's types have them). */
export type RouteAnswer<Route extends RouteContract> = {
  [Status in keyof Route["answers"]]: Status extends 200 | 201 | 202 | 204
    ? z.output<Route["answers"][Status]>
    : never;
}[keyof Route["answers"]];

/** A call's arguments: the input, which may be left out when nothing in it is required. */
export type RouteArguments<Route extends RouteContract> =
  Record<never, never> extends RouteInput<Route>
    ? [input?: RouteInput<Route>]
    : [input: RouteInput<Route>];

/**
 * The URL of a call: params put into the path (encoded), the query appended; lists are
 * comma-separated, `undefined` values left out.
 * @example routeUrl(rest.projects.files, { params: { id }, query: { path: "src" } }) // "/api/projects/<id>/files?path=src"
 */
export function routeUrl(
  route: Pick<RouteContract, "path">,
  input: { params?: object; query?: object } = {},
): string {
  const params = (input.params ?? {}) as Record<string, unknown>;
  const path = route.path.replace(/:(\w+)/g, (_match, name: string) => {
    const value = params[name];
    if (value === undefined || value === null || value === "") {
      throw new SystemError("internal", `${route.path} needs :${name}`);
    }
    return encodeURIComponent(String(value));
  });
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries((input.query ?? {}) as Record<string, unknown>)) {
    if (value === undefined || value === null) continue;
    search.set(key, Array.isArray(value) ? value.join(",") : String(value));
  }
  const text = search.toString();
  return text ? `${path}?${text}` : path;
}
