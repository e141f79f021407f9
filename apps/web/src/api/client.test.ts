// The REST client against a real HTTP server: answers, error bodies, odd answers, no server, and
// lists read page by page.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiError } from "./api-error.ts";
import { ApiClient } from "./client.ts";

let server: Server;
let baseUrl: string;
const seen: { method: string; url: string; authorization?: string; body: string }[] = [];

function reply(response: ServerResponse, status: number, body: string, type = "application/json") {
  response.writeHead(status, { "content-type": type });
  response.end(body);
}

async function handle(request: IncomingMessage, response: ServerResponse) {
  let body = "";
  for await (const chunk of request) body += chunk;
  seen.push({
    method: request.method ?? "",
    url: request.url ?? "",
    authorization: request.headers.authorization,
    body,
  });
  const url = new URL(request.url ?? "/", "http://localhost");
  switch (url.pathname) {
    case "/api/projects":
      return reply(response, 200, JSON.stringify({ projects: [{ _id: "p1", name: "demo" }] }));
    // Three sessions in pages of two, as the server pages them: after `cursor`, in id order.
    case "/api/projects/p1/sessions": {
      const all = ["s1", "s2", "s3"];
      const after = url.searchParams.get("cursor");
      const start = after ? all.indexOf(after) + 1 : 0;
      const page = all.slice(start, start + 2);
      const more = start + 2 < all.length;
      return reply(
        response,
        200,
        JSON.stringify({
          sessions: page.map((_id) => ({ _id })),
          nextCursor: more ? page.at(-1) : null,
        }),
      );
    }
    // A broken server that always points at the same next page.
    case "/api/projects/loop/sessions":
      return reply(response, 200, JSON.stringify({ sessions: [{ _id: "s1" }], nextCursor: "s1" }));
    case "/api/auth/logout":
    case "/api/auth/sign-ins/abc":
      response.writeHead(204);
      return response.end();
    case "/api/auth/signup":
      return reply(
        response,
        400,
        JSON.stringify({
          error: {
            code: "validation_failed",
            message: "Invalid body: password: must be at least 8 characters",
            details: [{ path: "password", message: "must be at least 8 characters" }],
          },
        }),
      );
    case "/api/me":
      return reply(
        response,
        401,
        JSON.stringify({ error: { code: "unauthorized", message: "Log in first" } }),
      );
    case "/api/drones/abc":
      response.writeHead(204);
      return response.end();
    case "/api/providers":
      return reply(response, 502, "<html>Bad Gateway</html>", "text/html");
    case "/api/drones":
      return reply(response, 200, "<!doctype html><html></html>", "text/html");
    default:
      return reply(
        response,
        404,
        JSON.stringify({ error: { code: "not_found", message: "No such route" } }),
      );
  }
}

beforeAll(async () => {
  server = createServer((request, response) => void handle(request, response));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe("ApiClient", () => {
  it("sends the bearer token and returns the JSON answer", async () => {
    const api = new ApiClient({ baseUrl, getToken: () => "secret-token" });
    const answer = await api.listProjects();
    expect(answer.projects[0]?.name).toBe("demo");
    expect(seen.at(-1)?.authorization).toBe("Bearer secret-token");
  });

  it("reads every page of a list, following the server's cursor until it answers null", async () => {
    const api = new ApiClient({ baseUrl });
    const before = seen.length;
    const { sessions } = await api.listSessions("p1");
    expect(sessions.map((session) => session._id)).toEqual(["s1", "s2", "s3"]);
    expect(seen.slice(before).map((request) => request.url)).toEqual([
      "/api/projects/p1/sessions?limit=500",
      "/api/projects/p1/sessions?limit=500&cursor=s2",
    ]);
  });

  it("stops, in words, when the server hands out the same page again", async () => {
    const api = new ApiClient({ baseUrl });
    await expect(api.listSessions("loop")).rejects.toThrow(
      "The server sent the same page of a list twice.",
    );
  });

  it("logs out by revoking the token it sends, and revokes another sign-in by its id", async () => {
    const api = new ApiClient({ baseUrl, getToken: () => "browser-token" });
    await api.logout();
    expect(seen.at(-1)).toMatchObject({
      method: "POST",
      url: "/api/auth/logout",
      authorization: "Bearer browser-token",
    });
    await api.revokeSignIn("abc");
    expect(seen.at(-1)).toMatchObject({ method: "DELETE", url: "/api/auth/sign-ins/abc" });
  });

  it("turns an error body into an ApiError with its message and field problems", async () => {
    const api = new ApiClient({ baseUrl });
    const error = await api
      .signup({ email: "a@b.co", password: "short" })
      .catch((caught) => caught);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ status: 400, code: "validation_failed" });
    expect(error.message).toContain("at least 8 characters");
    expect(error.fieldIssues).toEqual([
      { path: "password", message: "must be at least 8 characters" },
    ]);
    expect(JSON.parse(seen.at(-1)?.body ?? "{}")).toEqual({ email: "a@b.co", password: "short" });
  });

  it("tells the app when a logged-in request is refused, so it can log out", async () => {
    const refused: string[] = [];
    const api = new ApiClient({
      baseUrl,
      getToken: () => "old",
      onUnauthorized: (token) => refused.push(token),
    });
    await expect(api.me()).rejects.toThrow("Log in first");
    expect(refused).toEqual(["old"]);
  });

  it("accepts an empty 204 answer", async () => {
    const api = new ApiClient({ baseUrl });
    await expect(api.revokeDrone("abc")).resolves.toBeUndefined();
  });

  it("describes an HTML error page from a proxy in words", async () => {
    const api = new ApiClient({ baseUrl });
    await expect(api.listProviders()).rejects.toThrow(
      "The server could not be reached through the proxy (HTTP 502).",
    );
  });

  it("says so when a 200 answer is not JSON (not the Gadget Code server)", async () => {
    const api = new ApiClient({ baseUrl });
    await expect(api.listDrones()).rejects.toThrow(/not JSON/);
  });

  it("says the server cannot be reached when nothing listens", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const api = new ApiClient({ baseUrl: `http://127.0.0.1:${port}` });
    const error = await api.login({ email: "a@b.co", password: "x" }).catch((caught) => caught);
    expect(error).toMatchObject({ code: "network", status: 0 });
    expect(error.message).toBe(
      "Cannot reach the Gadget Code server. Check that it is running and that you are online.",
    );
  });
});
