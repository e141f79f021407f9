// The REST client of tests, benchmarks and scripts: `call(route, input)` for a route of the contract
// (typed, its answer checked against the contract), and raw requests for what the contract refuses.
import {
  type Drone,
  IDE_NAMESPACE,
  type IdeClientToServerEvents,
  type IdeServerToClientEvents,
  type RouteAnswer,
  type RouteArguments,
  type RouteContract,
  relayedCode,
  rest,
  routeUrl,
  SystemError,
  type TurnEventMessage,
  type TurnMode,
  UserError,
} from "@gadget/protocol";
import { io, type Socket } from "socket.io-client";

export interface ApiResponse<T = Record<string, unknown>> {
  status: number;
  body: T;
  headers: Headers;
}

/** Talks to one server as one user (or anonymously). */
export class ApiClient {
  constructor(
    readonly url: string,
    public token: string | null = null,
  ) {}

  async request<T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<ApiResponse<T>> {
    const response = await fetch(`${this.url}${path}`, {
      method,
      headers: {
        ...(body === undefined ? {} : { "content-type": "application/json" }),
        ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
        ...headers,
      },
      ...(body === undefined
        ? {}
        : { body: typeof body === "string" ? body : JSON.stringify(body) }),
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : {};
    } catch {
      // Not JSON (metrics): keep the text.
    }
    return { status: response.status, body: parsed as T, headers: response.headers };
  }

  /**
   * Calls one route of the contract. Its answer is parsed with the contract's schema, so every
   * test calling a route this way also checks that the server keeps the contract (dates come back
   * as Dates). A refusal throws UserError (4xx) or SystemError with the server's code and details.
   * @example const { project } = await client.call(rest.projects.create, { body: { name, gitUrl } });
   */
  async call<Route extends RouteContract>(
    route: Route,
    ...[input]: RouteArguments<Route>
  ): Promise<RouteAnswer<Route>> {
    const given = (input ?? {}) as { params?: object; query?: object; body?: unknown };
    const url = routeUrl(route, given);
    const body =
      given.body ?? (route.method === "GET" || route.method === "DELETE" ? undefined : {});
    const response = await this.request(route.method, url, body);
    const where = `${route.method} ${url} answered ${response.status}`;
    if (response.status >= 400 || response.status < 200) throw refusal(response, where);
    const schema = route.answers[response.status];
    if (!schema)
      throw new SystemError("bad_response", `${where}, a status the contract does not list`);
    const parsed = schema.safeParse(response.status === 204 ? undefined : response.body);
    if (!parsed.success) {
      throw new SystemError(
        "bad_response",
        `${where}, not as the contract says: ${parsed.error.message}`,
      );
    }
    return parsed.data as RouteAnswer<Route>;
  }

  // biome-ignore lint/suspicious/noExplicitAny: test convenience, bodies are checked by assertions
  get = (path: string) => this.request<any>("GET", path);
  // biome-ignore lint/suspicious/noExplicitAny: test convenience
  post = (path: string, body: unknown = {}) => this.request<any>("POST", path, body);
  // biome-ignore lint/suspicious/noExplicitAny: test convenience
  put = (path: string, body: unknown = {}) => this.request<any>("PUT", path, body);
  // biome-ignore lint/suspicious/noExplicitAny: test convenience
  patch = (path: string, body: unknown = {}) => this.request<any>("PATCH", path, body);
  // biome-ignore lint/suspicious/noExplicitAny: test convenience
  delete = (path: string) => this.request<any>("DELETE", path);
}

/** The error a refused call throws: the server's own code, message and details. */
function refusal(response: ApiResponse<unknown>, where: string): Error {
  const error = (
    response.body as { error?: { code?: unknown; message?: unknown; details?: unknown } }
  )?.error;
  const code = relayedCode(typeof error?.code === "string" ? error.code : "bad_response");
  const message = `${typeof error?.message === "string" ? error.message : "no error body"} (${where})`;
  const options = { details: error?.details };
  return response.status < 500
    ? new UserError(code, message, options)
    : new SystemError(code, message, options);
}

let counter = 0;

/** Signs up a fresh user; returns a client holding its token. */
export async function signup(
  url: string,
  name = "user",
): Promise<ApiClient & { userId: string; email: string }> {
  counter++;
  const email = `${name}-${process.pid}-${Date.now()}-${counter}@example.com`;
  const client = new ApiClient(url);
  const answer = await client.call(rest.accounts.signup, {
    body: { email, password: "correct horse battery", name },
  });
  client.token = answer.token;
  return Object.assign(client, { userId: answer.user._id, email });
}

/** A project, a session and a provider for `client`, ready for turns. */
export async function setupWorkspace(
  client: ApiClient,
  options: { projectName?: string; approval?: "auto" | "on-write"; mode?: TurnMode } = {},
) {
  const { provider } = await client.call(rest.providers.create, {
    body: {
      name: "scripted",
      baseUrl: "http://127.0.0.1:9/v1",
      apiKey: "sk-test-secret-key",
      modelId: "scripted-model",
    },
  });
  const { project } = await client.call(rest.projects.create, {
    body: { name: options.projectName ?? "Demo Project", gitUrl: "https://example.com/demo.git" },
  });
  const { session } = await client.call(rest.projects.createSession, {
    params: { id: project._id },
    body: {
      name: "Session",
      ...(options.approval ? { approval: options.approval } : {}),
      ...(options.mode ? { mode: options.mode } : {}),
    },
  });
  return {
    providerId: provider._id,
    projectId: project._id,
    projectSlug: project.slug,
    sessionId: session._id,
  };
}

/** Registers a drone for `client`'s user; returns its id and credential. */
export async function registerDrone(
  client: ApiClient,
  options: { name?: string; capacity?: number; labels?: string[] } = {},
): Promise<{ droneId: string; credential: string; drone: Drone }> {
  const { token } = await client.call(rest.drones.createRegistrationToken);
  const { drone, credential } = await new ApiClient(client.url).call(rest.drones.register, {
    body: {
      token,
      name: options.name ?? "drone",
      capacity: options.capacity ?? 1,
      ...(options.labels ? { labels: options.labels } : {}),
    },
  });
  return { droneId: drone._id, credential, drone };
}

/**
 * Waits until the server counts `droneId` as online: its presence is written just after the
 * socket connects, so a request sent at once may still find no drone.
 */
export async function waitForDroneOnline(client: ApiClient, droneId: string): Promise<void> {
  await waitFor(
    async () => {
      const { drones } = await client.call(rest.drones.list);
      return drones.some((drone) => drone._id === droneId && drone.status === "online");
    },
    10_000,
    `drone ${droneId} online`,
  );
}

/** Waits until the caller has drones and every one of them shows `status` (e.g. `offline`). */
export async function waitForDrones(client: ApiClient, status: Drone["status"]): Promise<void> {
  await waitFor(
    async () => {
      const { drones } = await client.call(rest.drones.list);
      return drones.length > 0 && drones.every((drone) => drone.status === status);
    },
    10_000,
    `every drone ${status}`,
  );
}

export type IdeSocket = Socket<IdeServerToClientEvents, IdeClientToServerEvents>;

/** A browser-like /ide client that records turn events. */
export class IdeClient {
  /** Every event received, one entry per event. */
  readonly events: TurnEventMessage[] = [];

  private constructor(readonly socket: IdeSocket) {
    socket.on("turn_events", ({ turnId, sessionId, events }) => {
      for (const event of events) this.events.push({ turnId, sessionId, event });
    });
  }

  static connect(url: string, token: string): Promise<IdeClient> {
    const socket: IdeSocket = io(`${url}${IDE_NAMESPACE}`, {
      auth: { token },
      transports: ["websocket"],
      reconnection: false,
      forceNew: true,
    });
    const client = new IdeClient(socket);
    return new Promise((resolve, reject) => {
      socket.once("connect", () => resolve(client));
      socket.once("connect_error", (error) => {
        socket.close();
        reject(error);
      });
    });
  }

  subscribe(request: { turnId?: string; sessionId?: string; activity?: true; after?: number }) {
    return this.socket.timeout(10_000).emitWithAck("subscribe", request);
  }

  /** Seqs received for one turn, in arrival order. */
  seqs(turnId: string): number[] {
    return this.events
      .filter((message) => message.turnId === turnId)
      .map((message) => message.event.seq);
  }

  close(): void {
    this.socket.close();
  }
}

/** Polls `check` until it returns a truthy value. */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  timeoutMs = 10_000,
  what = "condition",
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
