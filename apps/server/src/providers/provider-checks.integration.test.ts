// "Check" a provider: the user's online drone asks its /models (where turns call it), else the
// server does through its outbound policy; the answer is in words, the key is never echoed, and
// other users' providers stay invisible. (Attacks on the check: e2e/security.)
import { createServer } from "node:net";
import { type ScriptedModel, startScriptedModel } from "@gadget/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiClient } from "../testing/api-client.ts";
import { registerDrone, signup, waitForDroneOnline } from "../testing/api-client.ts";
import { ScriptedDrone } from "../testing/scripted-drone.ts";
import { useTestServer } from "../testing/use-test-server.ts";

// The scripted model listens on loopback: this server is allowed to call it, as the local stack is.
const fixture = useTestServer({ allowPrivateNetwork: true });

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}
let model: ScriptedModel;

beforeAll(async () => {
  model = await startScriptedModel({ apiKey: "sk-right", models: ["small", "large"] });
});
afterAll(async () => {
  await model?.close();
});

describe("POST /api/providers/check from the server (no drone online)", () => {
  it("lists the provider's models when the key is right", async () => {
    const user = await signup(fixture.server.url);
    const check = await user.post("/api/providers/check", {
      baseUrl: model.baseUrl,
      apiKey: "sk-right",
      modelId: "large",
    });
    expect(check.status).toBe(200);
    expect(check.body).toEqual({
      ok: true,
      models: ["large", "small"],
      message: `Reached ${model.baseUrl}/models: 2 models`,
      via: "server",
    });
    const last = model.requests.at(-1);
    expect(last?.path).toBe("/v1/models");
  });

  it("says in words what is wrong: the key, the model, the address", async () => {
    const user = await signup(fixture.server.url);
    const wrongKey = await user.post("/api/providers/check", {
      baseUrl: model.baseUrl,
      apiKey: "sk-wrong",
    });
    expect(wrongKey.body).toMatchObject({
      ok: false,
      message: expect.stringContaining("refused the API key (HTTP 401)"),
    });
    expect(JSON.stringify(wrongKey.body)).not.toContain("sk-wrong");

    const wrongModel = await user.post("/api/providers/check", {
      baseUrl: model.baseUrl,
      apiKey: "sk-right",
      modelId: "gigantic",
    });
    expect(wrongModel.body).toMatchObject({
      ok: false,
      models: ["large", "small"],
      message: 'The provider answered, but does not offer "gigantic"',
    });

    const wrongPath = await user.post("/api/providers/check", {
      baseUrl: model.baseUrl.replace(/\/v1$/, "/v2"),
      apiKey: "sk-right",
    });
    expect(wrongPath.body).toMatchObject({
      ok: false,
      message: expect.stringContaining("HTTP 404"),
    });

    // From the server, a failed connection reads the same whatever the cause (no port scanning).
    const port = await closedPort();
    const nobody = await user.post("/api/providers/check", {
      baseUrl: `http://127.0.0.1:${port}/v1`,
      apiKey: "sk-right",
    });
    expect(nobody.body).toEqual({
      ok: false,
      message: `Could not reach http://127.0.0.1:${port}/v1/models: no answer from that address`,
      via: "server",
    });
  });

  it("rejects a bad body with field paths and needs a login", async () => {
    const user = await signup(fixture.server.url);
    const bad = await user.post("/api/providers/check", { baseUrl: "ftp://x", apiKey: 3 });
    expect(bad.status).toBe(400);
    const paths = (bad.body.error as { details: Array<{ path: string }> }).details.map(
      (issue) => issue.path,
    );
    expect(paths).toEqual(expect.arrayContaining(["baseUrl", "apiKey"]));
    const anonymous = await fetch(`${fixture.server.url}/api/providers/check`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ baseUrl: model.baseUrl, apiKey: "sk-right" }),
    });
    expect(anonymous.status).toBe(401);
  });
});

describe("POST /api/providers/check through the user's drone", () => {
  it("runs on the online drone, which says why a connection failed on its own machine", async () => {
    const user = await signup(fixture.server.url, "with-drone");
    const { droneId, credential } = await registerDrone(user);
    const drone = await ScriptedDrone.connect({ url: fixture.server.url, droneId, credential });
    try {
      await waitForDroneOnline(user, droneId);
      const before = model.requests.length;
      const check = await user.post("/api/providers/check", {
        baseUrl: model.baseUrl,
        apiKey: "sk-right",
      });
      expect(check.body).toMatchObject({ ok: true, models: ["large", "small"], via: "drone" });
      expect(drone.providerChecks).toEqual([{ baseUrl: model.baseUrl, apiKey: "sk-right" }]);
      expect(model.requests.length).toBe(before + 1);

      const port = await closedPort();
      const nobody = await user.post("/api/providers/check", {
        baseUrl: `http://127.0.0.1:${port}/v1`,
        apiKey: "sk-right",
      });
      expect(nobody.body).toMatchObject({
        ok: false,
        message: `Could not reach http://127.0.0.1:${port}/v1/models: ECONNREFUSED`,
        via: "drone",
      });
    } finally {
      drone.close();
    }
  });
});

describe("POST /api/providers/:id/check", () => {
  it("checks a saved provider with its stored key, for its owner only", async () => {
    const owner = await signup(fixture.server.url, "owner");
    const created = await owner.post("/api/providers", {
      name: "scripted",
      baseUrl: model.baseUrl,
      apiKey: "sk-right",
      modelId: "small",
    });
    const providerId = (created.body.provider as { _id: string })._id;
    const before = model.requests.length;
    model.enqueue({ toolCalls: [{ name: "report_weather", arguments: { city: "Paris" } }] });
    const check = await owner.post(`/api/providers/${providerId}/check`, {});
    expect(check.status).toBe(200);
    expect(check.body).toMatchObject({ ok: true, models: ["large", "small"] });
    // The model list, the probe's call and its image call.
    expect(model.requests.length).toBe(before + 3);

    const stranger = await signup(fixture.server.url, "stranger");
    const hidden = await stranger.post(`/api/providers/${providerId}/check`, {});
    expect(hidden.status).toBe(404);
    expect(model.requests.length).toBe(before + 3);
    expect((await owner.post("/api/providers/not-an-id/check", {})).status).toBe(404);
  });
});

describe("the probe of a saved provider's check", () => {
  async function savedProvider(owner: ApiClient, params: Record<string, unknown> = {}) {
    const created = await owner.post("/api/providers", {
      name: "scripted",
      baseUrl: model.baseUrl,
      apiKey: "sk-right",
      modelId: "small",
      params,
    });
    return (created.body.provider as { _id: string })._id;
  }

  it("says what the provider did with a streamed call offering one tool", async () => {
    const owner = await signup(fixture.server.url, "probe");
    const providerId = await savedProvider(owner);
    model.enqueue({
      reasoning: "The user wants the weather tool.",
      toolCalls: [{ name: "report_weather", arguments: { city: "Paris" } }],
    });
    const check = await owner.post(`/api/providers/${providerId}/check`, {});
    expect(check.body).toMatchObject({
      ok: true,
      via: "server",
      probe: { streaming: true, toolCalling: true, reasoning: true, usage: true },
      quirks: [],
    });
    const probeRequest = model.chatRequests.at(-2);
    expect(probeRequest?.tools?.map((tool) => tool.function.name)).toEqual(["report_weather"]);
    expect(probeRequest?.stream).toBe(true);

    model.enqueue({ text: "It is sunny in Paris.", usage: null });
    const plain = await owner.post(`/api/providers/${providerId}/check`, {});
    expect(plain.body.probe).toEqual({
      streaming: true,
      toolCalling: false,
      reasoning: false,
      usage: false,
      message: "The model answered without calling the tool offered",
    });
  });

  it("adapts to a documented rejection and remembers it on the provider", async () => {
    const owner = await signup(fixture.server.url, "probe-adapts");
    const providerId = await savedProvider(owner, { temperature: 0.7 });
    const words =
      "Unsupported value: 'temperature' does not support 0.7 with this model. Only the default (1) value is supported.";
    model.enqueue(
      {
        error: {
          status: 400,
          message: words,
          type: "invalid_request_error",
          code: "unsupported_value",
        },
      },
      { toolCalls: [{ name: "report_weather", arguments: { city: "Paris" } }] },
    );
    const check = await owner.post(`/api/providers/${providerId}/check`, {});
    expect(check.body).toMatchObject({
      ok: true,
      probe: { streaming: true, toolCalling: true },
      quirks: ["no_temperature"],
    });
    expect(model.chatRequests.at(-3)?.temperature).toBe(0.7);
    expect(model.chatRequests.at(-2)).not.toHaveProperty("temperature");
    const listed = (await owner.get("/api/providers")).body.providers[0];
    expect(listed.quirks).toEqual([
      { code: "no_temperature", message: words, learnedAt: expect.any(String) },
    ]);

    // Known now: the next check's probe sends the adapted request at once.
    model.enqueue({ toolCalls: [{ name: "report_weather", arguments: { city: "Paris" } }] });
    const again = await owner.post(`/api/providers/${providerId}/check`, {});
    expect(again.body).toMatchObject({ probe: { toolCalling: true }, quirks: [] });
    expect(model.chatRequests.at(-2)).not.toHaveProperty("temperature");
    expect(model.chatRequests.at(-1)).not.toHaveProperty("temperature");
  });

  it("a failing probe call says why, and the check still answers", async () => {
    const owner = await signup(fixture.server.url, "probe-fails");
    const providerId = await savedProvider(owner);
    model.enqueue({
      error: { status: 400, message: "Invalid schema for function 'report_weather'" },
    });
    const check = await owner.post(`/api/providers/${providerId}/check`, {});
    expect(check.body).toMatchObject({
      ok: true,
      probe: {
        streaming: false,
        toolCalling: false,
        message: expect.stringContaining("Invalid schema for function 'report_weather'"),
      },
      quirks: [],
    });
  });

  it("learns whether the model takes images, remembers it for that model, forgets it for another", async () => {
    const owner = await signup(fixture.server.url, "probe-images");
    const providerId = await savedProvider(owner);
    const toolCall = { toolCalls: [{ name: "report_weather", arguments: { city: "Paris" } }] };
    model.enqueue(toolCall, {
      error: {
        status: 400,
        message: "Invalid content type. image_url is only supported by certain models.",
      },
    });
    const refused = await owner.post(`/api/providers/${providerId}/check`, {});
    expect(refused.body.probe).toMatchObject({
      images: false,
      imagesMessage: expect.stringContaining("image_url is only supported"),
    });
    const imageCall = model.chatRequests.at(-1)?.messages[0]?.content as Array<{ type: string }>;
    expect(imageCall.map((part) => part.type)).toEqual(["text", "image_url"]);
    let listed = (await owner.get("/api/providers")).body.providers[0];
    expect(listed.images).toMatchObject({ modelId: "small", accepted: false });

    model.enqueue(toolCall, { text: "Red" });
    await owner.post(`/api/providers/${providerId}/check`, {});
    listed = (await owner.get("/api/providers")).body.providers[0];
    expect(listed.images).toMatchObject({ modelId: "small", accepted: true });

    await owner.patch(`/api/providers/${providerId}`, { modelId: "large" });
    listed = (await owner.get("/api/providers")).body.providers[0];
    expect(listed.images).toBeNull();
  });

  it("runs on the user's online drone, which remembers nothing itself", async () => {
    const owner = await signup(fixture.server.url, "probe-drone");
    const providerId = await savedProvider(owner, { maxTokens: 500 });
    const { droneId, credential } = await registerDrone(owner);
    const drone = await ScriptedDrone.connect({ url: fixture.server.url, droneId, credential });
    try {
      await waitForDroneOnline(owner, droneId);
      model.enqueue(
        {
          error: {
            status: 400,
            message:
              "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
          },
        },
        { toolCalls: [{ name: "report_weather", arguments: { city: "Paris" } }] },
      );
      const check = await owner.post(`/api/providers/${providerId}/check`, {});
      expect(check.body).toMatchObject({
        ok: true,
        via: "drone",
        probe: { toolCalling: true },
        quirks: ["max_completion_tokens"],
      });
      expect(drone.providerChecks.at(-1)).toMatchObject({
        probe: { params: { maxTokens: 500 }, quirks: [] },
      });
      expect(model.chatRequests.at(-1)?.max_completion_tokens).toBe(500);
      const listed = (await owner.get("/api/providers")).body.providers[0];
      expect(listed.quirks).toEqual([
        {
          code: "max_completion_tokens",
          message: expect.stringContaining("Use 'max_completion_tokens' instead."),
          learnedAt: expect.any(String),
        },
      ]);
    } finally {
      drone.close();
    }
  });
});
