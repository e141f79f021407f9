// The REST client against a real HTTP server: answers, error bodies, odd answers, no server.
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
  switch (request.url) {
    case "/api/projects":
      return reply(response, 200, JSON.stringify({ projects: [{ _id: "p1", name: "demo" }] }));
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
    let refused = 0;
    const api = new ApiClient({
      baseUrl,
      getToken: () => "old",
      onUnauthorized: () => (refused += 1),
    });
    await expect(api.me()).rejects.toThrow("Log in first");
    expect(refused).toBe(1);
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
