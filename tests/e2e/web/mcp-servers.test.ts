// @vitest-environment node
// A project's MCP server set up in the web IDE, in real Chromium against the real server and the
// real `gadget-drone` CLI: the settings add a stdio server (its command line, a secret env value
// that is never shown again), a turn calls its tool inside the drone's sandbox, and the tool
// activity shows it under the server's name.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { startTestServer, uniqueName } from "@gadget/server/testing";
import { type ScriptedModel, startScriptedModel } from "@gadget/testkit";
import { type Browser, buildApp, launchBrowser, screenshot } from "@gadget/testkit/browser";
import { bundleMcpFixtureServer } from "@gadget/testkit/mcp";
import { ApiClient } from "@gadget/testkit/wire";
import { createRemote } from "gadget-drone/testing";
import type { Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import {
  type DroneProcess,
  registerWithCli,
  startCli,
  waitForDroneOnline,
} from "../drone/helpers.ts";
import { webDir } from "../paths.ts";

type GadgetServer = Awaited<ReturnType<typeof startTestServer>>;

const secret = "web-mcp-secret-51d7a2";

let scratch: string;
let server: GadgetServer;
let model: ScriptedModel;
let browser: Browser;
let page: Page;
let drone: DroneProcess | undefined;

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), "gadget-web-mcp-"));
  model = await startScriptedModel();
  model.setHandler(() => ({ text: "Nothing more to do." }));
  const outDir = path.join(scratch, "web");
  await buildApp(webDir, outDir);
  server = await startTestServer(
    { mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl"), webDir: outDir },
    uniqueName("web_mcp"),
  );
  browser = await launchBrowser();
  page = browser.page;
  page.setDefaultTimeout(20_000);
});

afterAll(async () => {
  drone?.child.kill("SIGKILL");
  await browser?.close();
  await server?.close();
  await model?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

afterEach(async (context) => {
  if (context.task.result?.state !== "fail" || !page) return;
  await screenshot(page, `failed-${context.task.name.slice(0, 40).replace(/\W+/g, "-")}`);
  console.error(`gadget-drone output:\n${drone?.output() ?? ""}`);
});

describe("MCP servers in the web IDE", () => {
  it("adds a stdio server in the project settings and shows its tool running in a turn", async () => {
    await page.goto(`${server.url}/signup`);
    await page.getByLabel("Name").fill("Ada");
    await page.getByLabel("Email").fill(`ada-${Date.now()}@example.test`);
    await page.getByLabel("Password").fill("correct horse battery");
    await page.getByRole("button", { name: "Sign up" }).click();
    await page.getByRole("heading", { name: "Activity", exact: true }).waitFor();
    const user = new ApiClient(
      server.url,
      (await page.evaluate(() => localStorage.getItem("gadget.token"))) ?? "",
    );
    const provider = await user.post("/api/providers", {
      name: "Scripted",
      baseUrl: model.baseUrl,
      apiKey: "sk-web-mcp",
      modelId: "scripted-model",
    });
    expect(provider.status).toBe(201);
    const remote = await createRemote({
      "README.md": "# Tracker\n",
      "mcp-server.mjs": await bundleMcpFixtureServer(),
    });
    const project = await user.post("/api/projects", { name: "tracker", gitUrl: remote.bare });
    const home = path.join(scratch, "home");
    const config = path.join(home, "drone.json");
    const registered = await registerWithCli(user, server.url, {
      name: "web-mcp-drone",
      workspace: path.join(home, "workspaces"),
      config,
      home,
    });
    expect(registered.code, registered.stderr).toBe(0);
    drone = startCli(["--config", config], home);
    await waitForDroneOnline(user, "web-mcp-drone", 30_000);

    // The settings: one stdio server with a secret env value.
    await page.goto(`${server.url}/projects/${project.body.project._id}`);
    await page.locator("details.project-settings > summary").click();
    await page.getByRole("button", { name: "Add MCP server" }).click();
    await page.getByLabel("Server name").fill("tracker");
    const group = page.getByRole("group", { name: "MCP server tracker" });
    await group.getByLabel("Command").fill("node mcp-server.mjs");
    await group.getByLabel("Environment").fill(`FIXTURE_SECRET=${secret}`);
    await page.getByRole("button", { name: "Save settings" }).click();
    await page.getByText("Saved; the next turn uses them.").waitFor();
    // The value is gone from the page; only its name stays.
    await group.getByRole("button", { name: "Remove FIXTURE_SECRET" }).waitFor();
    expect(await group.getByLabel("Environment").inputValue()).toBe("");
    await page.reload();
    await page.locator("details.project-settings > summary").click();
    expect(
      await page
        .getByRole("group", { name: "MCP server tracker" })
        .getByLabel("Command")
        .inputValue(),
    ).toBe("node mcp-server.mjs");
    expect(await page.content()).not.toContain(secret);
    await screenshot(page, "mcp-settings");

    // A turn that calls the server's read tool and its secret-telling one.
    model.enqueue(
      {
        toolCalls: [
          { name: "mcp__tracker__read_note", arguments: { id: "42" } },
          { name: "mcp__tracker__env_echo", arguments: { name: "FIXTURE_SECRET" } },
        ],
      },
      { text: "Read note 42." },
    );
    await page.getByLabel("Session name").fill("Use the tracker");
    await page.getByRole("button", { name: "New session" }).click();
    // A new session opens once created.
    await page.getByText("No turns yet.").waitFor();
    const box = page.getByRole("textbox", { name: "Prompt" });
    await box.fill("Read note 42");
    await box.press("Enter");
    const row = page.locator(".tool-row", { hasText: "mcp · tracker › read_note" });
    await row.locator(".tool-icon[aria-label='done']").waitFor({ timeout: 45_000 });
    await page.getByText("Read note 42.").waitFor();
    await row.locator(".tool-row-head").click();
    await row.getByText("mcp · tracker › read_note: ").first().waitFor();
    await page.locator(".tool-row", { hasText: "mcp · tracker › env_echo" }).waitFor();
    expect(await page.content()).not.toContain(secret);
    // What the model read: the note, and the secret's hash beside [redacted].
    const toolMessages = model.chatRequests[1]?.messages.filter(
      (message) => message.role === "tool",
    );
    expect(String(toolMessages?.[0]?.content)).toContain("note 42 from stdio");
    expect(String(toolMessages?.[1]?.content)).toMatch(/^FIXTURE_SECRET=\[redacted\] sha256=/);
    await screenshot(page, "mcp-tool-activity");
  }, 180_000);
});
