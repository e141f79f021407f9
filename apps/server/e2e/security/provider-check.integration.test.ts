// Findings 1 and 2: the provider check as an attacker uses it — a "provider" that streams forever,
// base URLs that point at the server's own network, a check used as a port scanner, and many
// checks at once. Every listener here is on loopback, as an internal service would be.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { registerDrone, signup, waitForDroneOnline } from "../../src/testing/api-client.ts";
import { ScriptedDrone } from "../../src/testing/scripted-drone.ts";
import { useTestServer } from "../../src/testing/use-test-server.ts";

/** A shared server, as shipped: private addresses refused. */
const shared = useTestServer();
/** The local one-command stack: private addresses allowed (the byte cap and bounds still hold). */
const local = useTestServer({ allowPrivateNetwork: true });

interface Listener {
  url: string;
  port: number;
  requests: string[];
  /** Bytes written into answers so far. */
  written: () => number;
  close(): Promise<void>;
}

async function listen(
  handle: (
    request: IncomingMessage,
    response: ServerResponse,
    count: (bytes: number) => void,
  ) => void,
): Promise<Listener> {
  const requests: string[] = [];
  let written = 0;
  const server: Server = createServer((request, response) => {
    requests.push(request.url ?? "");
    handle(request, response, (bytes) => {
      written += bytes;
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    written: () => written,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** An "internal service" with data a check must never bring back. */
let internal: Listener;
/** A model list that never ends: `{"data":[{"id":"m0"},{"id":"m1"},…` at full speed. */
let endless: Listener;
/** Answers after 1.5 s: holds a check open. */
let slow: Listener;
/** A model list, then a streamed answer to the check's probe that never ends. */
let endlessStream: Listener;

beforeAll(async () => {
  internal = await listen((_request, response) => {
    response.setHeader("content-type", "application/json");
    response.end(JSON.stringify({ data: [{ id: "internal-secret-42" }] }));
  });
  endless = await listen((_request, response, count) => {
    response.setHeader("content-type", "application/json");
    let index = 0;
    const chunk = (): string => `{"id":"model-${index++}-${"x".repeat(200)}"},`;
    const pump = () => {
      while (!response.destroyed) {
        const text = Array.from({ length: 64 }, chunk).join("");
        count(text.length);
        if (!response.write(text)) {
          response.once("drain", pump);
          return;
        }
      }
    };
    count(9);
    response.write('{"data":[');
    pump();
  });
  endlessStream = await listen((request, response, count) => {
    if (request.url?.endsWith("/models")) {
      response.setHeader("content-type", "application/json");
      response.end(JSON.stringify({ data: [{ id: "chatty" }] }));
      return;
    }
    response.setHeader("content-type", "text/event-stream");
    const event = `data: ${JSON.stringify({
      id: "x",
      object: "chat.completion.chunk",
      created: 0,
      model: "chatty",
      choices: [{ index: 0, delta: { content: "y".repeat(500) }, finish_reason: null }],
    })}\n\n`;
    const pump = () => {
      while (!response.destroyed) {
        count(event.length);
        if (!response.write(event)) {
          response.once("drain", pump);
          return;
        }
      }
    };
    pump();
  });
  slow = await listen((_request, response) => {
    setTimeout(() => response.end(JSON.stringify({ data: [{ id: "slow" }] })), 1_500);
  });
});
afterAll(async () => {
  await Promise.all([internal, endless, slow, endlessStream].map((listener) => listener?.close()));
});

describe("finding 1: a provider streaming an endless model list", () => {
  it("is cut off after 1 MiB: the check answers and the server stops reading", async () => {
    const user = await signup(local.server.url, "endless");
    const started = Date.now();
    const check = await user.post("/api/providers/check", {
      baseUrl: `${endless.url}/v1`,
      apiKey: "sk-anything",
    });
    expect(check.status).toBe(200);
    expect(check.body).toMatchObject({
      ok: false,
      message: expect.stringContaining("did not answer an OpenAI-compatible model list"),
    });
    expect(Date.now() - started).toBeLessThan(9_000);
    // What the provider got rid of: 1 MiB read, plus what the sockets' buffers took in.
    const writtenAtAnswer = endless.written();
    expect(writtenAtAnswer).toBeLessThan(16 * 1024 * 1024);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(endless.written() - writtenAtAnswer).toBeLessThan(4 * 1024 * 1024);
  });
});

describe("a saved provider's probe streaming an endless answer", () => {
  it("is cut off: the check answers with the probe's reason and the server stops reading", async () => {
    const user = await signup(local.server.url, "endless-probe");
    const saved = await user.post("/api/providers", {
      name: "chatty",
      baseUrl: `${endlessStream.url}/v1`,
      apiKey: "sk-anything",
      modelId: "chatty",
    });
    const check = await user.post(`/api/providers/${saved.body.provider._id}/check`);
    expect(check.status).toBe(200);
    expect(check.body).toMatchObject({
      ok: true,
      via: "server",
      probe: { streaming: true, toolCalling: false, message: expect.stringContaining("256 KiB") },
    });
    const writtenAtAnswer = endlessStream.written();
    expect(writtenAtAnswer).toBeLessThan(16 * 1024 * 1024);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(endlessStream.written() - writtenAtAnswer).toBeLessThan(4 * 1024 * 1024);
  });
});

describe("finding 2: a check aimed at the server's own network", () => {
  it("never reaches loopback, private, link-local or metadata addresses, however spelled", async () => {
    const user = await signup(shared.server.url, "ssrf");
    const port = internal.port;
    const aimed = [
      `http://127.0.0.1:${port}/v1`,
      `http://localhost:${port}/v1`,
      `http://[::1]:${port}/v1`,
      `http://[::ffff:127.0.0.1]:${port}/v1`,
      `http://0x7f000001:${port}/v1`,
      `http://2130706433:${port}/v1`,
      `http://127.1:${port}/v1`,
      `http://0.0.0.0:${port}/v1`,
      "http://169.254.169.254/latest/meta-data",
      "http://[fd00::1]/v1",
      "http://10.0.0.1/v1",
      "http://192.168.1.1/v1",
    ];
    for (const baseUrl of aimed) {
      const check = await user.post("/api/providers/check", { baseUrl, apiKey: "sk-x" });
      expect(check.status, baseUrl).toBe(200);
      expect(check.body.ok, baseUrl).toBe(false);
      expect(check.body.message, baseUrl).toMatch(/: no answer from that address$/);
      expect(JSON.stringify(check.body), baseUrl).not.toContain("internal-secret-42");
    }
    expect(internal.requests).toEqual([]);
  });

  it("refuses a base URL whose ? or # would make /models moot, or that carries a password", async () => {
    const user = await signup(shared.server.url, "moot");
    for (const baseUrl of [
      `${internal.url}/v1?x=`,
      `${internal.url}/v1#`,
      `${internal.url}/data.json?`,
      "http://user:pass@example.com/v1",
    ]) {
      const check = await user.post("/api/providers/check", { baseUrl, apiKey: "sk-x" });
      expect(check.status, baseUrl).toBe(400);
      expect(check.body.error.details[0].path, baseUrl).toBe("baseUrl");
      const saved = await user.post("/api/providers", {
        name: "moot",
        baseUrl,
        apiKey: "sk-x",
        modelId: "m",
      });
      expect(saved.status, baseUrl).toBe(400);
    }
    expect(internal.requests).toEqual([]);
  });

  it("cannot tell a closed port, Redis and an HTTP service apart", async () => {
    const user = await signup(shared.server.url, "scanner");
    const redisPort = new URL(inject("redisUrl")).port;
    const closed = await listen(() => undefined);
    const closedPort = closed.port;
    await closed.close();
    const answers = new Set<string>();
    for (const port of [closedPort, Number(redisPort), internal.port]) {
      const baseUrl = `http://127.0.0.1:${port}/v1`;
      const check = await user.post("/api/providers/check", { baseUrl, apiKey: "sk-x" });
      answers.add(String(check.body.message).replace(baseUrl, "<url>"));
    }
    expect([...answers]).toEqual(["Could not reach <url>/models: no answer from that address"]);
  });

  it("still lets a user save a provider on their own network: their drone checks and calls it", async () => {
    const user = await signup(shared.server.url, "laptop");
    const saved = await user.post("/api/providers", {
      name: "local model",
      baseUrl: `${internal.url}/v1`,
      apiKey: "",
      modelId: "internal-secret-42",
    });
    expect(saved.status).toBe(201);
    const { droneId, credential } = await registerDrone(user);
    const drone = await ScriptedDrone.connect({ url: shared.server.url, droneId, credential });
    shared.drones.push(drone);
    await waitForDroneOnline(user, droneId);
    const check = await user.post(`/api/providers/${saved.body.provider._id}/check`);
    expect(check.body).toMatchObject({ ok: true, models: ["internal-secret-42"], via: "drone" });
    // The model list, the probe's one call (this "provider" answers it with no stream), then the
    // call with a tiny image that tells whether the model takes images.
    expect(internal.requests).toEqual([
      "/v1/models",
      "/v1/chat/completions",
      "/v1/chat/completions",
    ]);
    expect(check.body.probe).toMatchObject({ streaming: false, toolCalling: false });
    drone.close();
    internal.requests.length = 0;
  });
});

describe("finding 1: many checks at once", () => {
  it("runs at most two checks of one user at a time; the third is refused at once", async () => {
    const user = await signup(local.server.url, "flood");
    const body = { baseUrl: `${slow.url}/v1`, apiKey: "sk-x" };
    const [first, second] = [
      user.post("/api/providers/check", body),
      user.post("/api/providers/check", body),
    ];
    await new Promise((resolve) => setTimeout(resolve, 300));
    const started = Date.now();
    const third = await user.post("/api/providers/check", body);
    expect(third.status).toBe(429);
    expect(third.body.error).toMatchObject({ code: "rate_limited", details: { limit: 2 } });
    expect(Date.now() - started).toBeLessThan(1_000);
    expect((await first).body.ok).toBe(true);
    expect((await second).body.ok).toBe(true);
    // Another user is not held back by the first one's checks.
    const other = await signup(local.server.url, "other");
    expect((await other.post("/api/providers/check", body)).status).toBe(200);
  });
});
