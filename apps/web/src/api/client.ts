// The web app's REST client, derived from the contract (`rest` in @gadget/protocol): `call(route,
// input)` for any route, typed by it, and the named methods the pages use, one line each.
import {
  type AuthResponse,
  type CreateProjectBody,
  type CreateProviderBody,
  type CreateSessionBody,
  type CreateTurnBody,
  type CreateWebhookBody,
  type FileEntry,
  type LoginBody,
  type ProviderCheckBody,
  type ProviderCheckResult,
  type RouteAnswer,
  type RouteArguments,
  type RouteContract,
  type RouteInput,
  rest,
  routeUrl,
  type SignupBody,
  type TurnStatus,
  type UpdateDroneBody,
  type UpdateProjectBody,
  type UpdateProviderBody,
  type UpdateSessionBody,
  type WriteFileBody,
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

/** The items of every page of a list route, under the route's own key. */
type ListOf<Route extends RouteContract, Key extends keyof RouteAnswer<Route>> = {
  [K in Key]: RouteAnswer<Route>[K];
};

/**
 * The REST API (docs/reference.md). Every method throws ApiError with a message fit to show.
 * @example const { projects } = await api.listProjects();
 */
export class ApiClient {
  readonly baseUrl: string;
  readonly getToken: () => string | null;
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
   * Calls one route of the contract; what it takes and answers are typed by the route.
   * @example const { project } = await api.call(rest.projects.update, { params: { id }, body: { name } });
   */
  call<Route extends RouteContract>(
    route: Route,
    ...[input]: RouteArguments<Route>
  ): Promise<RouteAnswer<Route>> {
    const given = (input ?? {}) as { params?: object; query?: object; body?: unknown };
    // A write without a body sends `{}`, as a JSON API is usually called.
    const body =
      given.body ?? (route.method === "GET" || route.method === "DELETE" ? undefined : {});
    return this.request(route.method, routeUrl(route, given), body);
  }

  /**
   * Reads every page of a list route, following `nextCursor` until the server answers null.
   * @example const { drones } = await this.listAll(rest.drones.list, "drones");
   */
  private async listAll<Route extends RouteContract, Key extends keyof RouteAnswer<Route> & string>(
    route: Route,
    key: Key,
    input: Omit<RouteInput<Route>, "query"> = {} as Omit<RouteInput<Route>, "query">,
  ): Promise<ListOf<Route, Key>> {
    const items: unknown[] = [];
    const seen = new Set<string>();
    let cursor: string | null = null;
    do {
      const query = { limit: LIST_PAGE, ...(cursor ? { cursor } : {}) };
      // Annotated: `cursor` is read from the page it helps to ask for.
      const page: { nextCursor?: string | null } & Record<string, unknown> = await this.request(
        "GET",
        routeUrl(route, { ...(input as { params?: object }), query }),
      );
      items.push(...((page[key] as unknown[] | undefined) ?? []));
      // A server without pages answers no cursor; one that repeats a cursor would never end.
      cursor = page.nextCursor ?? null;
      if (cursor && seen.has(cursor)) {
        throw new ApiError("bad_response", "The server sent the same page of a list twice.", 200);
      }
      if (cursor) seen.add(cursor);
    } while (cursor);
    return { [key]: items } as ListOf<Route, Key>;
  }

  // ---------- accounts ----------
  signup(body: SignupBody): Promise<AuthResponse> {
    return this.call(rest.accounts.signup, { body });
  }
  login(body: LoginBody): Promise<AuthResponse> {
    return this.call(rest.accounts.login, { body });
  }
  me() {
    return this.call(rest.accounts.me);
  }
  /** Revokes the token this client sends (the one of this browser). */
  logout(): Promise<void> {
    return this.call(rest.accounts.logout);
  }
  /** The user's sign-ins, newest first; `current` is this browser's. */
  listSignIns() {
    return this.call(rest.accounts.signIns);
  }
  revokeSignIn(signInId: string): Promise<void> {
    return this.call(rest.accounts.revokeSignIn, { params: { id: signInId } });
  }

  // ---------- drones ----------
  listDrones() {
    return this.listAll(rest.drones.list, "drones");
  }
  createRegistrationToken() {
    return this.call(rest.drones.createRegistrationToken);
  }
  /** Whether a drone registered with the token (by its id, the token's hash), and its status. */
  registrationTokenStatus(tokenId: string) {
    return this.call(rest.drones.registrationTokenStatus, { params: { id: tokenId } });
  }
  /** The drone package this server hands out (404 when it has none). */
  dronePackageInfo() {
    return this.call(rest.downloads.dronePackageInfo);
  }
  updateDrone(droneId: string, body: UpdateDroneBody) {
    return this.call(rest.drones.update, { params: { id: droneId }, body });
  }
  revokeDrone(droneId: string): Promise<void> {
    return this.call(rest.drones.revoke, { params: { id: droneId } });
  }

  // ---------- forge events ----------
  /** A new webhook secret for the project's forge, with its URL: shown once. */
  createForgeEventsSecret(projectId: string) {
    return this.call(rest.forgeEvents.createSecret, { params: { id: projectId } });
  }
  listForgeEvents(projectId: string) {
    return this.call(rest.forgeEvents.list, { params: { id: projectId } });
  }

  // ---------- webhooks ----------
  listWebhooks() {
    return this.listAll(rest.webhooks.list, "webhooks");
  }
  /** The answer holds the signing secret: shown once, never again. */
  createWebhook(body: CreateWebhookBody) {
    return this.call(rest.webhooks.create, { body });
  }
  deleteWebhook(webhookId: string): Promise<void> {
    return this.call(rest.webhooks.remove, { params: { id: webhookId } });
  }
  listWebhookDeliveries(webhookId: string) {
    return this.call(rest.webhooks.deliveries, { params: { id: webhookId } });
  }
  testWebhook(webhookId: string) {
    return this.call(rest.webhooks.test, { params: { id: webhookId } });
  }

  // ---------- providers ----------
  listProviders() {
    return this.listAll(rest.providers.list, "providers");
  }
  createProvider(body: CreateProviderBody) {
    return this.call(rest.providers.create, { body });
  }
  /** Asks the server to list the provider's models (browsers cannot call providers: CORS). */
  checkProvider(body: ProviderCheckBody): Promise<ProviderCheckResult> {
    return this.call(rest.providers.check, { body });
  }
  /** Checks a saved provider: its /models, then one small call offering one tool (the probe). */
  checkSavedProvider(providerId: string): Promise<ProviderCheckResult> {
    return this.call(rest.providers.checkSaved, { params: { id: providerId } });
  }
  /** Changes a provider; a new apiKey replaces the stored one (never shown again). */
  updateProvider(providerId: string, body: UpdateProviderBody) {
    return this.call(rest.providers.update, { params: { id: providerId }, body });
  }
  deleteProvider(providerId: string): Promise<void> {
    return this.call(rest.providers.remove, { params: { id: providerId } });
  }
  /** Forgets what turns learned the provider refuses; the next turn sends the plain request. */
  forgetProviderQuirks(providerId: string) {
    return this.call(rest.providers.forgetQuirks, { params: { id: providerId } });
  }

  // ---------- projects and files ----------
  listProjects() {
    return this.listAll(rest.projects.list, "projects");
  }
  /** Creates a project; `gitUrlCheck` says whether a drone checked its URL (a bad URL is a 400). */
  createProject(body: CreateProjectBody) {
    return this.call(rest.projects.create, { body });
  }
  /** Deletes the project with its sessions and turns (409 while a turn of it runs). */
  deleteProject(projectId: string): Promise<void> {
    return this.call(rest.projects.remove, { params: { id: projectId } });
  }
  /** Has a drone clone (or fetch) the project now, so its files show before any turn. */
  cloneProject(projectId: string) {
    return this.call(rest.projects.clone, { params: { id: projectId } });
  }
  updateProject(projectId: string, body: UpdateProjectBody) {
    return this.call(rest.projects.update, { params: { id: projectId }, body });
  }
  /** Files of the project's default branch, or of `sessionId`'s worktree. */
  async listFiles(projectId: string, path: string, sessionId?: string): Promise<FileEntry[]> {
    const query = { path, session: sessionId };
    return (await this.call(rest.files.list, { params: { id: projectId }, query })).entries;
  }
  readFile(projectId: string, path: string, sessionId?: string) {
    const query = { path, session: sessionId };
    return this.call(rest.files.read, { params: { id: projectId }, query });
  }
  /** The project's `/name` commands (of `sessionId`'s branch), from a drone holding it. */
  projectCommands(projectId: string, sessionId?: string) {
    const query = { session: sessionId };
    return this.call(rest.projects.commands, { params: { id: projectId }, query });
  }
  /** Writes into `body.sessionId`'s worktree (the default branch's checkout is read-only). */
  writeFile(projectId: string, body: WriteFileBody) {
    return this.call(rest.files.write, { params: { id: projectId }, body });
  }

  // ---------- sessions and turns ----------
  getSession(sessionId: string) {
    return this.call(rest.sessions.get, { params: { id: sessionId } });
  }
  listSessions(projectId: string) {
    return this.listAll(rest.projects.sessions, "sessions", { params: { id: projectId } });
  }
  createSession(projectId: string, body: CreateSessionBody) {
    return this.call(rest.projects.createSession, { params: { id: projectId }, body });
  }
  updateSession(sessionId: string, body: UpdateSessionBody) {
    return this.call(rest.sessions.update, { params: { id: sessionId }, body });
  }
  /** Deletes the session with its turns (409 while a turn of it runs). */
  deleteSession(sessionId: string): Promise<void> {
    return this.call(rest.sessions.remove, { params: { id: sessionId } });
  }
  listTurns(sessionId: string) {
    return this.listAll(rest.sessions.turns, "turns", { params: { id: sessionId } });
  }
  createTurn(sessionId: string, body: CreateTurnBody) {
    return this.call(rest.sessions.createTurn, { params: { id: sessionId }, body });
  }
  /** Commits the session worktree's uncommitted changes and pushes its branch now. */
  deliverSession(sessionId: string) {
    return this.call(rest.sessions.deliver, { params: { id: sessionId } });
  }
  /** One page of the user's turns across projects, newest first (the Activity page). */
  listActivity(query: ActivityQuery = {}) {
    const status = query.status && query.status.length > 0 ? query.status.join(",") : undefined;
    return this.call(rest.turns.list, {
      query: {
        status,
        project: query.project || undefined,
        drone: query.drone || undefined,
        cursor: query.cursor || undefined,
        limit: query.limit || undefined,
      },
    });
  }
  /** How many of the user's turns run, wait on them, or wait for a drone. */
  turnSummary() {
    return this.call(rest.turns.summary);
  }
  getTurn(turnId: string) {
    return this.call(rest.turns.get, { params: { id: turnId } });
  }
  listEvents(turnId: string, after: number, limit = EVENTS_PAGE) {
    return this.call(rest.turns.events, { params: { id: turnId }, query: { after, limit } });
  }
  async cancelTurn(turnId: string): Promise<void> {
    await this.call(rest.turns.cancel, { params: { id: turnId } });
  }
  async resumeTurn(turnId: string): Promise<void> {
    await this.call(rest.turns.resume, { params: { id: turnId } });
  }
  /** A queued turn's new prompt (409 once it started). */
  editTurn(turnId: string, prompt: string) {
    return this.call(rest.turns.edit, { params: { id: turnId }, body: { prompt } });
  }
  /** A message to a running or queued turn; `interrupt` stops what is in flight first. */
  steerTurn(turnId: string, text: string, interrupt = false) {
    return this.call(rest.turns.postMessage, { params: { id: turnId }, body: { text, interrupt } });
  }
  /** Takes back `turnId` and the turns after it, with the code when `code`. */
  rewindSession(sessionId: string, turnId: string, code: boolean) {
    return this.call(rest.sessions.rewind, { params: { id: sessionId }, body: { turnId, code } });
  }
  /** A new session with this one's turns up to `turnId`. */
  forkSession(sessionId: string, turnId: string) {
    return this.call(rest.sessions.fork, { params: { id: sessionId }, body: { turnId } });
  }
  /** Undoes a finished turn's changes with a revert commit on the session's branch. */
  revertTurn(turnId: string) {
    return this.call(rest.turns.revert, { params: { id: turnId } });
  }
  /** `alwaysAllow`: approve this command and let the session run it without asking again. */
  async decideApproval(
    turnId: string,
    approvalId: string,
    approve: boolean,
    alwaysAllow = false,
    /** What goes with the decision: a budget's `{extendBy}`. */
    input?: { extendBy: number },
  ): Promise<void> {
    await this.call(rest.turns.decide, {
      params: { id: turnId, approvalId },
      body: {
        approve,
        ...(alwaysAllow ? { alwaysAllow: true } : {}),
        ...(input ? { input } : {}),
      },
    });
  }
}
