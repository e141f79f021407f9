// A small fetch wrapper for tests, benchmarks and scripts: JSON in, `{status, body}` out.
import type {
  Drone,
  IdeClientToServerEvents,
  IdeServerToClientEvents,
  TurnEventMessage,
} from "@gadget/protocol";
import { IDE_NAMESPACE } from "@gadget/protocol";
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

let counter = 0;

/** Signs up a fresh user; returns a client holding its token. */
export async function signup(
  url: string,
  name = "user",
): Promise<ApiClient & { userId: string; email: string }> {
  counter++;
  const email = `${name}-${process.pid}-${Date.now()}-${counter}@example.com`;
  const client = new ApiClient(url);
  const response = await client.post("/api/auth/signup", {
    email,
    password: "correct horse battery",
    name,
  });
  if (response.status !== 201) throw new Error(`signup failed: ${JSON.stringify(response.body)}`);
  client.token = response.body.token;
  return Object.assign(client, { userId: String(response.body.user._id), email });
}

/** A project, a session and a provider for `client`, ready for turns. */
export async function setupWorkspace(
  client: ApiClient,
  options: { projectName?: string; approval?: "auto" | "on-write"; mode?: string } = {},
) {
  const provider = await client.post("/api/providers", {
    name: "scripted",
    baseUrl: "http://127.0.0.1:9/v1",
    apiKey: "sk-test-secret-key",
    modelId: "scripted-model",
  });
  const project = await client.post("/api/projects", {
    name: options.projectName ?? "Demo Project",
    gitUrl: "https://example.com/demo.git",
  });
  const session = await client.post(`/api/projects/${project.body.project._id}/sessions`, {
    name: "Session",
    ...(options.approval ? { approval: options.approval } : {}),
    ...(options.mode ? { mode: options.mode } : {}),
  });
  if (provider.status !== 201 || project.status !== 201 || session.status !== 201) {
    throw new Error("workspace setup failed");
  }
  return {
    providerId: String(provider.body.provider._id),
    projectId: String(project.body.project._id),
    projectSlug: String(project.body.project.slug),
    sessionId: String(session.body.session._id),
  };
}

/** Registers a drone for `client`'s user; returns its id and credential. */
export async function registerDrone(
  client: ApiClient,
  options: { name?: string; capacity?: number; labels?: string[] } = {},
): Promise<{ droneId: string; credential: string; drone: Drone }> {
  const token = await client.post("/api/drones/registration-tokens");
  const anonymous = new ApiClient(client.url);
  const registered = await anonymous.post("/api/drones/register", {
    token: token.body.token,
    name: options.name ?? "drone",
    capacity: options.capacity ?? 1,
    ...(options.labels ? { labels: options.labels } : {}),
  });
  if (registered.status !== 201)
    throw new Error(`register failed: ${JSON.stringify(registered.body)}`);
  return {
    droneId: String(registered.body.drone._id),
    credential: String(registered.body.credential),
    drone: registered.body.drone,
  };
}

/**
 * Waits until the server counts `droneId` as online: its presence is written just after the
 * socket connects, so a request sent at once may still find no drone.
 */
export async function waitForDroneOnline(client: ApiClient, droneId: string): Promise<void> {
  await waitFor(
    async () => {
      const listed = await client.request<{ drones?: Array<{ _id: string; status: string }> }>(
        "GET",
        "/api/drones",
      );
      return listed.body.drones?.some(
        (drone) => drone._id === droneId && drone.status === "online",
      );
    },
    10_000,
    `drone ${droneId} online`,
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
