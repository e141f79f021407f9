// The few REST calls the drone CLI makes, with one-line errors a developer can act on.
import {
  type ApiErrorBody,
  droneAuthorization,
  type RegisterDroneBody,
  type RegisterDroneResponse,
  registerDroneResponseSchema,
  relayedCode,
  SystemError,
  UserError,
} from "@gadget/protocol";

/** Parses and normalises a server URL, or says why it is not one. */
export function serverUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UserError(
      "invalid_server_url",
      `"${value}" is not a URL; use e.g. --server http://127.0.0.1:3000`,
    );
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new UserError("invalid_server_url", `"${value}" must start with http:// or https://`);
  }
  return url.origin + url.pathname.replace(/\/+$/, "");
}

async function request(server: string, route: string, init: RequestInit = {}): Promise<Response> {
  try {
    return await fetch(`${server}${route}`, { ...init, signal: AbortSignal.timeout(15_000) });
  } catch (error) {
    // undici wraps the socket error, sometimes in an AggregateError (one per address tried).
    const wrapped = (
      error as { cause?: { code?: string; message?: string; errors?: Array<{ code?: string }> } }
    ).cause;
    const cause = wrapped?.code ?? wrapped?.errors?.[0]?.code;
    const why =
      cause === "ECONNREFUSED"
        ? "connection refused"
        : cause === "ENOTFOUND"
          ? "host not found"
          : (error as Error).name === "TimeoutError"
            ? "no answer within 15 s"
            : (cause ?? wrapped?.message ?? (error as Error).message);
    throw new SystemError("server_unreachable", `Cannot reach the server at ${server}: ${why}`);
  }
}

async function errorBody(response: Response): Promise<ApiErrorBody["error"] | null> {
  try {
    const body = (await response.json()) as Partial<ApiErrorBody>;
    return body.error && typeof body.error.message === "string" ? body.error : null;
  } catch {
    return null;
  }
}

/** Exchanges a registration token for the drone's credential. */
export async function registerDrone(
  server: string,
  body: RegisterDroneBody,
): Promise<RegisterDroneResponse> {
  const response = await request(server, "/api/drones/register", {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${body.token}` },
    body: JSON.stringify(body),
  });
  if (response.ok) {
    const parsed = registerDroneResponseSchema.safeParse(await response.json().catch(() => null));
    if (!parsed.success)
      throw new SystemError(
        "bad_response",
        `${server} answered, but not like a gadget-code server`,
      );
    return parsed.data;
  }
  const error = await errorBody(response);
  if (!error) {
    throw new SystemError(
      "bad_response",
      `${server} does not look like a gadget-code server (HTTP ${response.status} on /api/drones/register)`,
    );
  }
  if (
    response.status === 401 ||
    response.status === 403 ||
    response.status === 404 ||
    response.status === 410
  ) {
    throw new UserError(
      "invalid_token",
      `The registration token was refused (${error.message}): tokens work once and expire after 15 minutes; create a new one with "Add a drone" in the web IDE`,
    );
  }
  throw new UserError(relayedCode(error.code), `Registration failed: ${error.message}`);
}

/** Whether the server answers its liveness check, and how fast. */
export async function checkServer(server: string): Promise<{ ok: boolean; detail: string }> {
  const started = Date.now();
  try {
    const response = await request(server, "/healthz");
    return { ok: response.ok, detail: `HTTP ${response.status} in ${Date.now() - started} ms` };
  } catch (error) {
    return { ok: false, detail: (error as Error).message };
  }
}

/**
 * Why the server refuses this drone, or null when it does not (or cannot be asked now). A socket
 * refused at its HTTP request carries no reason; this asks the REST API, which gives one.
 */
export async function droneRefusal(
  server: string,
  droneId: string,
  credential: string,
): Promise<{ code: string; message: string } | null> {
  let response: Response;
  try {
    response = await request(server, "/api/drones/self", {
      headers: { authorization: droneAuthorization(droneId, credential) },
    });
  } catch {
    return null; // unreachable: keep retrying the socket
  }
  if (response.status !== 401 && response.status !== 403) {
    await response.body?.cancel();
    return null;
  }
  const error = await errorBody(response);
  return {
    code: error?.code ?? (response.status === 401 ? "unauthorized" : "forbidden"),
    message: error?.message ?? `HTTP ${response.status}`,
  };
}

/** The server's record of this drone (its labels as the user set them), or null when unreachable. */
export async function droneRecord(
  server: string,
  droneId: string,
  credential: string,
): Promise<{ labels: string[]; outdated: boolean } | null> {
  try {
    const response = await request(server, "/api/drones/self", {
      headers: { authorization: droneAuthorization(droneId, credential) },
    });
    if (!response.ok) {
      await response.body?.cancel();
      return null;
    }
    const body = (await response.json()) as { drone?: { labels?: unknown; outdated?: unknown } };
    const labels = Array.isArray(body.drone?.labels)
      ? body.drone.labels.filter((label): label is string => typeof label === "string")
      : [];
    return { labels, outdated: body.drone?.outdated === true };
  } catch {
    return null;
  }
}

/** Tells the server this drone is gone (its credential stops working). */
export async function unregisterDrone(
  server: string,
  droneId: string,
  credential: string,
): Promise<void> {
  const response = await request(server, "/api/drones/self", {
    method: "DELETE",
    headers: { authorization: droneAuthorization(droneId, credential) },
  });
  if (response.ok || response.status === 204) return;
  const error = await errorBody(response);
  throw new UserError(
    error ? relayedCode(error.code) : "unregister_failed",
    error?.message ?? `HTTP ${response.status}`,
  );
}
