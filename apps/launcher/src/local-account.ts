// The local user and its drone, through the server's own REST API (the same path a person takes).
// The login is kept in `<data>/local-user.json` (mode 0600) so a second run logs in again.
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { SystemError } from "@gadget/protocol";

export interface LocalUser {
  email: string;
  password: string;
}

export interface Session {
  user: LocalUser;
  token: string;
  /** True when this run created the user. */
  created: boolean;
}

export interface DroneSummary {
  _id: string;
  name: string;
  status: "online" | "offline";
}

/** The server answered something this launcher cannot go on from. */
export class LaunchError extends SystemError {
  constructor(message: string) {
    super("launch_failed", message);
  }
}

async function call<T>(
  baseUrl: string,
  method: string,
  route: string,
  body?: unknown,
  token?: string,
): Promise<{ status: number; body: T }> {
  const response = await fetch(`${baseUrl}${route}`, {
    method,
    headers: {
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : {}) as T };
}

function errorMessage(body: unknown): string {
  return (body as { error?: { message?: string } })?.error?.message ?? JSON.stringify(body);
}

/**
 * Writes the login to `userFile` (mode 0600) in one step: a stop halfway leaves the old file or
 * the new one, never half of it.
 */
function keepUser(userFile: string, user: LocalUser): void {
  const partial = `${userFile}.partial`;
  writeFileSync(partial, `${JSON.stringify(user, null, 2)}\n`, { mode: 0o600 });
  renameSync(partial, userFile);
}

/**
 * Logs in as the saved local user, or signs one up (first run, or a data directory that was reset).
 * A new user's password is kept in `userFile` before the user is created, so a launcher stopped at
 * any moment leaves a data directory the next run can log in with.
 * @example const session = await localSession("http://127.0.0.1:3000", ".gadget/local-user.json");
 */
export async function localSession(
  baseUrl: string,
  userFile: string,
  say: (line: string) => void = () => {},
): Promise<Session> {
  const saved = existsSync(userFile)
    ? (JSON.parse(readFileSync(userFile, "utf8")) as LocalUser)
    : null;
  if (saved) {
    const login = await call<{ token: string }>(baseUrl, "POST", "/api/auth/login", saved);
    if (login.status === 200) return { user: saved, token: login.body.token, created: false };
    if (login.status !== 401) {
      throw new LaunchError(`could not log in the local user: ${errorMessage(login.body)}`);
    }
  }
  const user: LocalUser = saved ?? {
    email: "local@gadget.localhost",
    password: randomBytes(12).toString("base64url"),
  };
  if (!saved) keepUser(userFile, user);
  say("creating the local user…");
  const signup = await call<{ token: string }>(baseUrl, "POST", "/api/auth/signup", {
    ...user,
    name: "Local user",
  });
  if (signup.status === 409) {
    throw new LaunchError(
      `the user ${user.email} exists but ${userFile} does not hold its password; ` +
        `set one with \`pnpm gadget-code user reset-password ${user.email}\` and put it in that file, or delete the data directory`,
    );
  }
  if (signup.status !== 201) {
    throw new LaunchError(`could not create the local user: ${errorMessage(signup.body)}`);
  }
  return { user, token: signup.body.token, created: true };
}

/** The user's drones as the server lists them. */
export async function listDrones(baseUrl: string, token: string): Promise<DroneSummary[]> {
  const answer = await call<{ drones: DroneSummary[] }>(
    baseUrl,
    "GET",
    "/api/drones",
    undefined,
    token,
  );
  if (answer.status !== 200) {
    throw new LaunchError(`could not list drones: ${errorMessage(answer.body)}`);
  }
  return answer.body.drones;
}

/** A fresh registration token (single use, 15 minutes). */
export async function registrationToken(baseUrl: string, token: string): Promise<string> {
  const answer = await call<{ token: string }>(
    baseUrl,
    "POST",
    "/api/drones/registration-tokens",
    {},
    token,
  );
  if (answer.status !== 201) {
    throw new LaunchError(`could not create a registration token: ${errorMessage(answer.body)}`);
  }
  return answer.body.token;
}

/**
 * What the local user still has to add before a first prompt (a provider, a project), as one
 * line to print; null once both exist, or when the server cannot say.
 */
export async function firstRunHint(baseUrl: string, token: string): Promise<string | null> {
  const [providers, projects] = await Promise.all(
    ["/api/providers", "/api/projects?limit=1"].map((route) =>
      call<{ providers?: unknown[]; projects?: unknown[] }>(
        baseUrl,
        "GET",
        route,
        undefined,
        token,
      ),
    ),
  );
  if (providers?.status !== 200 || projects?.status !== 200) return null;
  const missing = [
    (providers.body.providers ?? []).length === 0 ? "a provider (an OpenAI-compatible API)" : null,
    (projects.body.projects ?? []).length === 0 ? "a project" : null,
  ].filter((step) => step !== null);
  if (missing.length === 0) return null;
  return `add ${missing.join(", then ")} in the web IDE, then ask away.`;
}
