// Typed REST client for the server's /api (docs/reference.md): one fetch wrapper and one method per route.
import type {
  AuthResponse,
  ChatSession,
  ChatTurn,
  CreateProjectBody,
  CreateProviderBody,
  CreateSessionBody,
  CreateTurnBody,
  CreateWebhookBody,
  CreateWebhookResponse,
  Drone,
  FileContent,
  FileEntry,
  GitUrlCheck,
  LoginBody,
  Project,
  ProjectCloneAnswer,
  Provider,
  ProviderCheckBody,
  ProviderCheckResult,
  RegistrationTokenResponse,
  SessionDeliveryAnswer,
  SessionDetail,
  SignIn,
  SignupBody,
  TurnEvent,
  TurnListAnswer,
  TurnRevertAnswer,
  TurnStatus,
  TurnSummary,
  UpdateDroneBody,
  UpdateProjectBody,
  UpdateProviderBody,
  UpdateSessionBody,
  User,
  Webhook,
  WebhookDelivery,
} from "@gadget/protocol";
import { ApiError, errorFromResponse, toApiError } from "./api-error.ts";

export type { ProviderCheckBody, ProviderCheckResult };

export interface ApiClientOptions {
  /** Origin of the server; "" (default) means the page's own origin, as served in production. */
  baseUrl?: string;
  /** Returns the bearer token, or null when logged out. */
  getToken?: () => string | null;
  /**
   * Called when an authenticated request answers 401, so the app can log out. It gets the token
   * that was refused: an answer arriving after a new login must not end the new one.
   */
  onUnauthorized?: (token: string) => void;
  /** Milliseconds before a request gives up (default 30,000). */
  timeoutMs?: number;
}

/** Page size when reading a turn's stored events (the server's maximum). */
export const EVENTS_PAGE = 1000;

/** Page size when reading a list route (the server's maximum): most lists fit in one request. */
export const LIST_PAGE = 500;

/** The filters and page of `GET /api/turns`. */
export interface ActivityQuery {
  status?: readonly TurnStatus[];
  project?: string;
  drone?: string;
  cursor?: string;
  limit?: number;
}

/** One page of a list route: the items under their own key, and where the next page starts. */
type ListPage<Key extends string, Item> = { [K in Key]: Item[] } & { nextCursor?: string | null };

/**
 * The REST API (docs/reference.md). Every method throws ApiError with a message fit to show.
 * @example const { projects } = await api.listProjects();
 */
export class ApiClient {
  readonly baseUrl: string;
  private readonly getToken: () => string | null;
  private readonly onUnauthorized: (token: string) => void;
  private readonly timeoutMs: number;

  constructor(options: ApiClientOptions = {}) {
    this.baseUrl = options.baseUrl ?? "";
    this.getToken = options.getToken ?? (() => null);
    this.onUnauthorized = options.onUnauthorized ?? (() => {});
    this.timeoutMs = options.timeoutMs ?? 30_000;
  }

  /** Sends one request and returns the parsed JSON answer (undefined for 204). */
  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { accept: "application/json" };
    const token = this.getToken();
    if (token) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers["content-type"] = "application/json";
    let response: Response;
    try {
      response = await fetch(`${this.baseUrl}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      throw toApiError(error);
    }
    const text = await response.text().catch(() => "");
    let parsed: unknown;
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
    }
    if (!response.ok) {
      if (response.status === 401 && token) this.onUnauthorized(token);
      throw errorFromResponse(response.status, parsed);
    }
    if (response.status === 204 || !text) return undefined as T;
    if (parsed === undefined) {
      throw new ApiError(
        "bad_response",
        `The server sent something that is not JSON (HTTP ${response.status}). Is this the Gadget Code server?`,
        response.status,
      );
    }
    return parsed as T;
  }

  /**
   * Reads every page of a list route, following `nextCursor` until the server answers null.
   * @example const { drones } = await this.listAll("/api/drones", "drones");
   */
  private async listAll<Key extends string, Item>(
    path: string,
    key: Key,
  ): Promise<{ [K in Key]: Item[] }> {
    const items: Item[] = [];
    const seen = new Set<string>();
    let cursor: string | null = null;
    do {
      const query = `limit=${LIST_PAGE}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
      // Annotated: `cursor` is read from the page it helps to ask for.
      const page: ListPage<Key, Item> = await this.request(
        "GET",
        `${path}${path.includes("?") ? "&" : "?"}${query}`,
      );
      items.push(...(page[key] ?? []));
      // A server without pages answers no cursor; one that repeats a cursor would never end.
      cursor = page.nextCursor ?? null;
      if (cursor && seen.has(cursor)) {
        throw new ApiError("bad_response", "The server sent the same page of a list twice.", 200);
      }
      if (cursor) seen.add(cursor);
    } while (cursor);
    return { [key]: items } as { [K in Key]: Item[] };
  }

  // ---------- auth ----------
  signup(body: SignupBody): Promise<AuthResponse> {
    return this.request("POST", "/api/auth/signup", body);
  }
  login(body: LoginBody): Promise<AuthResponse> {
    return this.request("POST", "/api/auth/login", body);
  }
  me(): Promise<{ user: User }> {
    return this.request("GET", "/api/me");
  }
  /** Revokes the token this client sends (the one of this browser). */
  logout(): Promise<void> {
    return this.request("POST", "/api/auth/logout", {});
  }
  /** The user's sign-ins, newest first; `current` is this browser's. */
  listSignIns(): Promise<{ signIns: SignIn[] }> {
    return this.request("GET", "/api/auth/sign-ins");
  }
  revokeSignIn(signInId: string): Promise<void> {
    return this.request("DELETE", `/api/auth/sign-ins/${encodeURIComponent(signInId)}`);
  }

  // ---------- drones ----------
  listDrones(): Promise<{ drones: Drone[] }> {
    return this.listAll("/api/drones", "drones");
  }
  createRegistrationToken(): Promise<RegistrationTokenResponse> {
    return this.request("POST", "/api/drones/registration-tokens", {});
  }
  updateDrone(droneId: string, body: UpdateDroneBody): Promise<{ drone: Drone }> {
    return this.request("PATCH", `/api/drones/${encodeURIComponent(droneId)}`, body);
  }
  revokeDrone(droneId: string): Promise<void> {
    return this.request("DELETE", `/api/drones/${encodeURIComponent(droneId)}`);
  }

  // ---------- providers ----------
  // ---------- webhooks ----------
  listWebhooks(): Promise<{ webhooks: Webhook[] }> {
    return this.listAll("/api/webhooks", "webhooks");
  }
  /** The answer holds the signing secret: shown once, never again. */
  createWebhook(body: CreateWebhookBody): Promise<CreateWebhookResponse> {
    return this.request("POST", "/api/webhooks", body);
  }
  deleteWebhook(webhookId: string): Promise<void> {
    return this.request("DELETE", `/api/webhooks/${encodeURIComponent(webhookId)}`);
  }
  listWebhookDeliveries(webhookId: string): Promise<{ deliveries: WebhookDelivery[] }> {
    return this.request("GET", `/api/webhooks/${encodeURIComponent(webhookId)}/deliveries`);
  }
  testWebhook(webhookId: string): Promise<{ delivery: WebhookDelivery }> {
    return this.request("POST", `/api/webhooks/${encodeURIComponent(webhookId)}/test`);
  }

  listProviders(): Promise<{ providers: Provider[] }> {
    return this.listAll("/api/providers", "providers");
  }
  createProvider(body: CreateProviderBody): Promise<{ provider: Provider } | Provider> {
    return this.request("POST", "/api/providers", body);
  }
  /** Asks the server to list the provider's models (browsers cannot call providers: CORS). */
  checkProvider(body: ProviderCheckBody): Promise<ProviderCheckResult> {
    return this.request("POST", "/api/providers/check", body);
  }
  /** Checks a saved provider: its /models, then one small call offering one tool (the probe). */
  checkSavedProvider(providerId: string): Promise<ProviderCheckResult> {
    return this.request("POST", `/api/providers/${encodeURIComponent(providerId)}/check`, {});
  }
  /** Changes a provider; a new apiKey replaces the stored one (never shown again). */
  updateProvider(providerId: string, body: UpdateProviderBody): Promise<{ provider: Provider }> {
    return this.request("PATCH", `/api/providers/${encodeURIComponent(providerId)}`, body);
  }
  deleteProvider(providerId: string): Promise<void> {
    return this.request("DELETE", `/api/providers/${encodeURIComponent(providerId)}`);
  }
  /** Forgets what turns learned the provider refuses; the next turn sends the plain request. */
  forgetProviderQuirks(providerId: string): Promise<{ provider: Provider }> {
    return this.request("DELETE", `/api/providers/${encodeURIComponent(providerId)}/quirks`);
  }

  // ---------- projects and files ----------
  listProjects(): Promise<{ projects: Project[] }> {
    return this.listAll("/api/projects", "projects");
  }
  /** Creates a project; `gitUrlCheck` says whether a drone checked its URL (a bad URL is a 400). */
  createProject(body: CreateProjectBody): Promise<{ project: Project; gitUrlCheck?: GitUrlCheck }> {
    return this.request("POST", "/api/projects", body);
  }
  /** Deletes the project with its sessions and turns (409 while a turn of it runs). */
  deleteProject(projectId: string): Promise<void> {
    return this.request("DELETE", `/api/projects/${encodeURIComponent(projectId)}`);
  }
  /** Has a drone clone (or fetch) the project now, so its files show before any turn. */
  cloneProject(projectId: string): Promise<ProjectCloneAnswer> {
    return this.request("POST", `/api/projects/${encodeURIComponent(projectId)}/clone`, {});
  }
  updateProject(projectId: string, body: UpdateProjectBody): Promise<{ project: Project }> {
    return this.request("PATCH", `/api/projects/${encodeURIComponent(projectId)}`, body);
  }
  /** Files of the project's default branch, or of `sessionId`'s worktree. */
  async listFiles(projectId: string, path: string, sessionId?: string): Promise<FileEntry[]> {
    const answer = await this.request<{ entries: FileEntry[] } | FileEntry[]>(
      "GET",
      `/api/projects/${encodeURIComponent(projectId)}/files?path=${encodeURIComponent(path)}${sessionQuery(sessionId)}`,
    );
    return Array.isArray(answer) ? answer : answer.entries;
  }
  readFile(projectId: string, path: string, sessionId?: string): Promise<FileContent> {
    return this.request(
      "GET",
      `/api/projects/${encodeURIComponent(projectId)}/file?path=${encodeURIComponent(path)}${sessionQuery(sessionId)}`,
    );
  }
  /** Writes into `body.sessionId`'s worktree (the default branch's checkout is read-only). */
  writeFile(
    projectId: string,
    body: { path: string; content: string; baseSha?: string; sessionId?: string },
  ): Promise<{ sha: string }> {
    return this.request("PUT", `/api/projects/${encodeURIComponent(projectId)}/file`, body);
  }
  getSession(sessionId: string): Promise<{ session: SessionDetail }> {
    return this.request("GET", `/api/sessions/${encodeURIComponent(sessionId)}`);
  }

  // ---------- sessions and turns ----------
  listSessions(projectId: string): Promise<{ sessions: ChatSession[] }> {
    return this.listAll(`/api/projects/${encodeURIComponent(projectId)}/sessions`, "sessions");
  }
  createSession(projectId: string, body: CreateSessionBody): Promise<{ session: ChatSession }> {
    return this.request("POST", `/api/projects/${encodeURIComponent(projectId)}/sessions`, body);
  }
  updateSession(sessionId: string, body: UpdateSessionBody): Promise<{ session: ChatSession }> {
    return this.request("PATCH", `/api/sessions/${encodeURIComponent(sessionId)}`, body);
  }
  /** Deletes the session with its turns (409 while a turn of it runs). */
  deleteSession(sessionId: string): Promise<void> {
    return this.request("DELETE", `/api/sessions/${encodeURIComponent(sessionId)}`);
  }
  listTurns(sessionId: string): Promise<{ turns: ChatTurn[] }> {
    return this.listAll(`/api/sessions/${encodeURIComponent(sessionId)}/turns`, "turns");
  }
  createTurn(sessionId: string, body: CreateTurnBody): Promise<{ turn: ChatTurn }> {
    return this.request("POST", `/api/sessions/${encodeURIComponent(sessionId)}/turns`, body);
  }
  /** Commits the session worktree's uncommitted changes and pushes its branch now. */
  deliverSession(sessionId: string): Promise<{ delivery: SessionDeliveryAnswer }> {
    return this.request("POST", `/api/sessions/${encodeURIComponent(sessionId)}/deliver`, {});
  }
  /** One page of the user's turns across projects, newest first (the Activity page). */
  listActivity(query: ActivityQuery = {}): Promise<TurnListAnswer> {
    const search = new URLSearchParams();
    if (query.status && query.status.length > 0) search.set("status", query.status.join(","));
    if (query.project) search.set("project", query.project);
    if (query.drone) search.set("drone", query.drone);
    if (query.cursor) search.set("cursor", query.cursor);
    if (query.limit) search.set("limit", String(query.limit));
    const text = search.toString();
    return this.request("GET", `/api/turns${text ? `?${text}` : ""}`);
  }
  /** How many of the user's turns run, wait on them, or wait for a drone. */
  turnSummary(): Promise<TurnSummary> {
    return this.request("GET", "/api/turns/summary");
  }
  getTurn(turnId: string): Promise<{ turn: ChatTurn }> {
    return this.request("GET", `/api/turns/${encodeURIComponent(turnId)}`);
  }
  listEvents(turnId: string, after: number, limit = EVENTS_PAGE): Promise<{ events: TurnEvent[] }> {
    return this.request(
      "GET",
      `/api/turns/${encodeURIComponent(turnId)}/events?after=${after}&limit=${limit}`,
    );
  }
  cancelTurn(turnId: string): Promise<void> {
    return this.request("POST", `/api/turns/${encodeURIComponent(turnId)}/cancel`, {});
  }
  resumeTurn(turnId: string): Promise<void> {
    return this.request("POST", `/api/turns/${encodeURIComponent(turnId)}/resume`, {});
  }
  /** Undoes a finished turn's changes with a revert commit on the session's branch. */
  revertTurn(turnId: string): Promise<TurnRevertAnswer> {
    return this.request("POST", `/api/turns/${encodeURIComponent(turnId)}/revert`, {});
  }
  /** `alwaysAllow`: approve this command and let the session run it without asking again. */
  decideApproval(
    turnId: string,
    approvalId: string,
    approve: boolean,
    alwaysAllow = false,
  ): Promise<void> {
    return this.request(
      "POST",
      `/api/turns/${encodeURIComponent(turnId)}/approvals/${encodeURIComponent(approvalId)}`,
      { approve, ...(alwaysAllow ? { alwaysAllow: true } : {}) },
    );
  }
}

/** `&session=<id>` for a session's worktree; nothing for the default branch. */
function sessionQuery(sessionId: string | undefined): string {
  return sessionId ? `&session=${encodeURIComponent(sessionId)}` : "";
}
