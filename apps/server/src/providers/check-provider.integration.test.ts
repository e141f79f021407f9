// "Check" a provider: the server asks its /models with the key, for a new or a saved provider,
// and answers in words; the key is never echoed and other users' providers stay invisible.
import { createServer } from "node:net";
import { type ScriptedModel, startScriptedModel } from "@gadget/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signup } from "../testing/api-client.ts";
import { useTestServer } from "../testing/use-test-server.ts";

const fixture = useTestServer();

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

describe("POST /api/providers/check", () => {
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

    const port = await closedPort();
    const nobody = await user.post("/api/providers/check", {
      baseUrl: `http://127.0.0.1:${port}/v1`,
      apiKey: "sk-right",
    });
    expect(nobody.body).toMatchObject({
      ok: false,
      message: expect.stringContaining(
        `Could not reach http://127.0.0.1:${port}/v1/models: ECONNREFUSED`,
      ),
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
    const check = await owner.post(`/api/providers/${providerId}/check`, {});
    expect(check.status).toBe(200);
    expect(check.body).toMatchObject({ ok: true, models: ["large", "small"] });
    expect(model.requests.length).toBe(before + 1);

    const stranger = await signup(fixture.server.url, "stranger");
    const hidden = await stranger.post(`/api/providers/${providerId}/check`, {});
    expect(hidden.status).toBe(404);
    expect(model.requests.length).toBe(before + 1);
    expect((await owner.post("/api/providers/not-an-id/check", {})).status).toBe(404);
  });
});
