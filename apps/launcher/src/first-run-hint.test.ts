// The launcher's first-run hint against a small HTTP server answering as ours does: it names
// what is missing (a provider, a project) and is gone once both exist or the server cannot say.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { firstRunHint } from "./local-account.ts";

const state = { providers: [] as unknown[], projects: [] as unknown[], status: 200 };
let server: Server;
let baseUrl: string;

beforeAll(async () => {
  server = createServer((request, response) => {
    const path = new URL(request.url ?? "/", "http://localhost").pathname;
    response.statusCode = request.headers.authorization === "Bearer t1" ? state.status : 401;
    response.setHeader("content-type", "application/json");
    response.end(
      JSON.stringify(
        path === "/api/providers"
          ? { providers: state.providers, nextCursor: null }
          : { projects: state.projects, nextCursor: null },
      ),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe("the launcher's first-run hint", () => {
  it("names a provider and a project while both are missing", async () => {
    Object.assign(state, { providers: [], projects: [], status: 200 });
    expect(await firstRunHint(baseUrl, "t1")).toBe(
      "add a provider (an OpenAI-compatible API), then a project in the web IDE, then ask away.",
    );
  });

  it("names only what is missing", async () => {
    Object.assign(state, { providers: [{ _id: "p" }], projects: [], status: 200 });
    expect(await firstRunHint(baseUrl, "t1")).toBe("add a project in the web IDE, then ask away.");
  });

  it("says nothing once a provider and a project exist, or when the server cannot say", async () => {
    Object.assign(state, { providers: [{ _id: "p" }], projects: [{ _id: "x" }], status: 200 });
    expect(await firstRunHint(baseUrl, "t1")).toBeNull();
    Object.assign(state, { providers: [], projects: [], status: 200 });
    expect(await firstRunHint(baseUrl, "wrong")).toBeNull();
  });
});
