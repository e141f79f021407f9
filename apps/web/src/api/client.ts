// Typed REST client for SPEC.md's /api: one fetch wrapper and one method per route.
import type {
  AuthResponse,
  ChatSession,
  ChatTurn,
  CreateProjectBody,
  CreateProviderBody,
  CreateSessionBody,
  CreateTurnBody,
  Drone,
  FileContent,
  FileEntry,
  LoginBody,
  Project,
  Provider,
  RegistrationTokenResponse,
  SignupBody,
  TurnEvent,
  User,
} from "@gadget/protocol";
import { ApiError, errorFromResponse, toApiError } from "./api-error.ts";

export interface ApiClientOptions {
  /** Origin of the server; "" (default) means the page's own origin, as served in production. */
  baseUrl?: string;
  /** Returns the bearer token, or null when logged out. */
  getToken?: () => string | null;
  /** Called when an authenticated request answers 401, so the app can log out. */
  onUnauthorized?: () => void;
  /** Milliseconds before a request gives up (default 30,000). */
  timeoutMs?: number;
}

/** What the provider check answers (see docs in the report: POST /api/providers/check). */
export interface ProviderCheckResult {
  ok: boolean;
  models?: string[];
  message?: string;
}

export interface ProviderCheckBody {
  baseUrl: string;
  apiKey: string;
  modelId?: string;
}

/** Page size when reading a turn's stored events (the server's maximum). */
export const EVENTS_PAGE = 1000;

/**
 * The REST API of SPEC.md. Every method throws ApiError with a message fit to show.
 * @example const { projects } = await api.listProjects();
 */
export class ApiClient {
  readonly baseUrl: string;
  private readonly getToken: () => string | null;
  private readonly onUnauthorized: () => void;
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
      if (response.status === 401 && token) this.onUnauthorized();
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

  // ---------- drones ----------
  listDrones(): Promise<{ drones: Drone[] }> {
    return this.request("GET", "/api/drones");
  }
  createRegistrationToken(): Promise<RegistrationTokenResponse> {
    return this.request("POST", "/api/drones/registration-tokens", {});
  }
  revokeDrone(droneId: string): Promise<void> {
    return this.request("DELETE", `/api/drones/${encodeURIComponent(droneId)}`);
  }

  // ---------- providers ----------
  listProviders(): Promise<{ providers: Provider[] }> {
    return this.request("GET", "/api/providers");
  }
  createProvider(body: CreateProviderBody): Promise<{ provider: Provider } | Provider> {
    return this.request("POST", "/api/providers", body);
  }
  /** Asks the server to list the provider's models (browsers cannot call providers: CORS). */
  checkProvider(body: ProviderCheckBody): Promise<ProviderCheckResult> {
    return this.request("POST", "/api/providers/check", body);
  }
  checkSavedProvider(providerId: string): Promise<ProviderCheckResult> {
    return this.request("POST", `/api/providers/${encodeURIComponent(providerId)}/check`, {});
  }

  // ---------- projects and files ----------
  listProjects(): Promise<{ projects: Project[] }> {
    return this.request("GET", "/api/projects");
  }
  createProject(body: CreateProjectBody): Promise<{ project: Project }> {
    return this.request("POST", "/api/projects", body);
  }
  async listFiles(projectId: string, path: string): Promise<FileEntry[]> {
    const answer = await this.request<{ entries: FileEntry[] } | FileEntry[]>(
      "GET",
      `/api/projects/${encodeURIComponent(projectId)}/files?path=${encodeURIComponent(path)}`,
    );
    return Array.isArray(answer) ? answer : answer.entries;
  }
  readFile(projectId: string, path: string): Promise<FileContent> {
    return this.request(
      "GET",
      `/api/projects/${encodeURIComponent(projectId)}/file?path=${encodeURIComponent(path)}`,
    );
  }
  writeFile(
    projectId: string,
    body: { path: string; content: string; baseSha?: string },
  ): Promise<{ sha: string }> {
    return this.request("PUT", `/api/projects/${encodeURIComponent(projectId)}/file`, body);
  }

  // ---------- sessions and turns ----------
  listSessions(projectId: string): Promise<{ sessions: ChatSession[] }> {
    return this.request("GET", `/api/projects/${encodeURIComponent(projectId)}/sessions`);
  }
  createSession(projectId: string, body: CreateSessionBody): Promise<{ session: ChatSession }> {
    return this.request("POST", `/api/projects/${encodeURIComponent(projectId)}/sessions`, body);
  }
  listTurns(sessionId: string): Promise<{ turns: ChatTurn[] }> {
    return this.request("GET", `/api/sessions/${encodeURIComponent(sessionId)}/turns`);
  }
  createTurn(sessionId: string, body: CreateTurnBody): Promise<{ turn: ChatTurn }> {
    return this.request("POST", `/api/sessions/${encodeURIComponent(sessionId)}/turns`, body);
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
  decideApproval(turnId: string, approvalId: string, approve: boolean): Promise<void> {
    return this.request(
      "POST",
      `/api/turns/${encodeURIComponent(turnId)}/approvals/${encodeURIComponent(approvalId)}`,
      { approve },
    );
  }
}
