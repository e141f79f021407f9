// @vitest-environment node
// A provider that refuses what the drone sends, seen in real Chromium against the real server:
// checking a saved provider runs a test call (the probe) that meets OpenAI's recorded refusal of
// `temperature`, adapts, and says what works; the providers page then shows what was learned,
// it is still there after a reload, and "Forget" clears it.
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { startTestServer, uniqueName } from "@gadget/server/testing";
import { type ScriptedModel, type ScriptedRequest, startScriptedModel } from "@gadget/testkit";
import { type Browser, buildApp, launchBrowser, screenshot } from "@gadget/testkit/browser";
import { ApiClient } from "@gadget/testkit/wire";
import type { Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { repoDir, webDir } from "../paths.ts";

type GadgetServer = Awaited<ReturnType<typeof startTestServer>>;

const apiKey = "sk-quirks-e2e";
/** OpenAI's answer to `temperature` on a reasoning model, as recorded (see the fixture's index). */
const refusal = JSON.parse(
  readFileSync(
    path.join(repoDir, "packages/agent/src/__fixtures__/rejections/openai-temperature-value.json"),
    "utf8",
  ),
) as { status: number; body: unknown };

let scratch: string;
let server: GadgetServer;
let model: ScriptedModel;
let browser: Browser;
let page: Page;
let token = "";

/** Calls the first offered tool with a value for each required string argument. */
function callOfferedTool(request: ScriptedRequest) {
  const tool = request.body.tools?.[0]?.function;
  if (!tool) return { text: "No tool was offered." };
  const parameters = (tool.parameters ?? {}) as { required?: string[] };
  const args = Object.fromEntries((parameters.required ?? []).map((name) => [name, "ok"]));
  return { toolCalls: [{ name: tool.name, arguments: args }] };
}

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), "gadget-web-quirks-"));
  model = await startScriptedModel({ apiKey, models: ["o4-mini"] });
  model.setHandler((request) =>
    request.body.temperature !== undefined
      ? { error: { status: refusal.status, body: refusal.body } }
      : callOfferedTool(request),
  );
  const outDir = path.join(scratch, "web");
  await buildApp(webDir, outDir);
  // The model listens on loopback: this server may reach private addresses, as the local stack does.
  server = await startTestServer(
    {
      mongoUrl: inject("mongoUrl"),
      redisUrl: inject("redisUrl"),
      webDir: outDir,
      allowPrivateNetwork: true,
    },
    uniqueName("web_provider_quirks"),
  );
  browser = await launchBrowser();
  page = browser.page;
  page.setDefaultTimeout(20_000);
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await model?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

afterEach(async (context) => {
  if (context.task.result?.state !== "fail" || !page) return;
  await screenshot(page, `failed-${context.task.name.slice(0, 40).replace(/\W+/g, "-")}`);
});

describe("a provider's quirks in the web IDE", () => {
  it("checks a saved provider: the test call adapts to the refused temperature and says what works", async () => {
    await page.goto(`${server.url}/signup`);
    await page.getByLabel("Name").fill("Ada");
    await page.getByLabel("Email").fill(`ada-${Date.now()}@example.test`);
    await page.getByLabel("Password").fill("correct horse battery");
    await page.getByRole("button", { name: "Sign up" }).click();
    // Nothing has run yet: the empty Activity page shows the first-run steps.
    await page.getByRole("region", { name: "Get started" }).waitFor();
    token = (await page.evaluate(() => localStorage.getItem("gadget.token"))) ?? "";

    await page.getByRole("link", { name: "Providers", exact: true }).click();
    await page.getByLabel("Name").fill("Reasoner");
    await page.getByLabel("Base URL").fill(model.baseUrl);
    await page.getByLabel("Model", { exact: true }).fill("o4-mini");
    await page.getByLabel("API key").fill(apiKey);
    await page.getByLabel("Temperature").fill("0.7");
    await page.getByRole("button", { name: "Add provider" }).click();
    const row = page.getByRole("row", { name: /Reasoner/ });
    await row.getByRole("cell", { name: "Reasoner", exact: true }).waitFor();

    // Saving runs the test call at once: it adapts to the refused temperature and says what works.
    const saved = page.getByRole("region", { name: "Check after saving" });
    const features = saved.getByRole("list", { name: "What a test call found" });
    await features.waitFor();
    expect(await features.textContent()).toContain("Streaming: yes");
    expect(await features.textContent()).toContain("Tool calling: yes");
    await saved.getByText("Learned: temperature is not sent (the model refuses it).").waitFor();
    // The first test call carried the temperature and was refused; the ones after (the tool
    // call again, then the image call) did not.
    const calls = model.chatRequests;
    expect(calls.map((call) => call.temperature)).toEqual([0.7, undefined, undefined]);
    await screenshot(page, "provider-check-probe");
  });

  it("shows what was learned after a reload, and forgets it on request", async () => {
    await page.reload();
    const row = page.getByRole("row", { name: /Reasoner/ });
    const learned = row.getByRole("list", { name: "What Reasoner refuses" });
    await learned.waitFor();
    expect(await learned.textContent()).toMatch(
      /temperature is not sent \(the model refuses it\) \(learned (just now|\d+ s ago): “Unsupported value: 'temperature'/,
    );
    await screenshot(page, "provider-quirks");

    await row.getByRole("button", { name: "Forget" }).click();
    await expect.poll(() => learned.count()).toBe(0);
    const api = new ApiClient(server.url, token);
    const listed = await api.get("/api/providers");
    expect(listed.body.providers[0].quirks).toEqual([]);
  });

  it("edits the provider in place (a new key never shown) and deletes it after asking", async () => {
    const row = page.getByRole("row", { name: /Reasoner/ }).first();
    await row.getByRole("button", { name: "Edit" }).click();
    const form = page.getByRole("form", { name: "Edit Reasoner" });
    await form.getByLabel("Name").fill("Reasoner (edited)");
    // A key typed here is the one the check uses (the model stand-in accepts only the right one).
    await form.getByLabel("New API key").fill(apiKey);
    await form.getByRole("button", { name: "Check /models" }).click();
    await form.getByText("The provider answered with").waitFor();
    await form.getByRole("combobox", { name: "Model", exact: true }).fill("o4-mini-high");
    await form.getByRole("button", { name: "Save" }).click();
    const edited = page.getByRole("row", { name: /Reasoner \(edited\)/ });
    await edited.getByText("o4-mini-high").waitFor();
    expect(await page.content()).not.toContain(apiKey);
    const api = new ApiClient(server.url, token);
    const listed = await api.get("/api/providers");
    expect(listed.body.providers[0]).toMatchObject({
      name: "Reasoner (edited)",
      modelId: "o4-mini-high",
      hasApiKey: true,
    });
    await screenshot(page, "provider-edit");

    await edited.getByRole("button", { name: "Delete" }).click();
    await edited.getByRole("button", { name: "Yes, delete" }).click();
    await page.getByText("No providers yet.").waitFor();
    expect((await api.get("/api/providers")).body.providers).toEqual([]);
  });
});
