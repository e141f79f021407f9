// @vitest-environment node
// What a newcomer's first pass found on the page layouts, measured in real Chromium against the
// real server and a scripted drone: on Activity a guard's long outcome stays clear of the project
// link; the session page's folded settings are one line (desktop and phone); the project page's
// "Files of" choice stays inside its panel whatever a session is called, the idle editor does not
// point "on the left" on a phone, and "Delete project" is the last of the project's settings.
import path from "node:path";
import { startTestServer, uniqueName } from "@gadget/server/testing";
import { makeTempDir } from "@gadget/testkit";
import { type Browser, buildApp, launchBrowser, screenshot } from "@gadget/testkit/browser";
import { registerDrone, ScriptedDrone, setupWorkspace, signup } from "@gadget/testkit/wire";
import type { Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { webDir } from "../paths.ts";

type GadgetServer = Awaited<ReturnType<typeof startTestServer>>;

const prompt = "Tidy every module of the calculator";
const longSession =
  "Rewrite the whole parser and the evaluator so that operator precedence finally works";

let server: GadgetServer;
let user: Awaited<ReturnType<typeof signup>>;
let workspace: Awaited<ReturnType<typeof setupWorkspace>>;
let drone: ScriptedDrone;
let browser: Browser;
let page: Page;

async function box(locator: Locator) {
  const found = await locator.boundingBox();
  if (!found) throw new Error(`${locator} is not on screen`);
  return found;
}

beforeAll(async () => {
  const outDir = path.join(await makeTempDir("gadget-web-newcomer-"), "web");
  await buildApp(webDir, outDir);
  server = await startTestServer(
    { mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl"), webDir: outDir },
    uniqueName("web_newcomer_layout"),
  );
  user = await signup(server.url, "ada");
  workspace = await setupWorkspace(user, { projectName: "calculator" });
  const second = await user.post(`/api/projects/${workspace.projectId}/sessions`, {
    name: longSession,
  });
  expect(second.status).toBe(201);
  const registered = await registerDrone(user, { name: "scripted-laptop" });
  drone = await ScriptedDrone.connect({
    url: server.url,
    droneId: registered.droneId,
    credential: registered.credential,
    workspaces: [workspace.projectSlug],
  });
  // A turn its tool-call guard stopped: the longest outcome Activity shows.
  const created = await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
    prompt,
    providerId: workspace.providerId,
  });
  expect(created.status).toBe(202);
  const order = await drone.nextWorkOrder(20_000);
  await drone.stream(order.turnId, [
    { type: "status", data: { message: "Pass 1", pass: 1, model: "scripted-model" } },
    { type: "response", data: { message: "Stopping at the tool-call limit." } },
    { type: "done", data: { reason: "max_tool_calls", passes: 1, totalCost: 0 } },
  ]);

  browser = await launchBrowser({ viewport: { width: 1440, height: 900 } });
  page = browser.page;
  page.setDefaultTimeout(30_000);
  await page.goto(`${server.url}/login`);
  await page.evaluate(
    ({ token, me }) => {
      localStorage.setItem("gadget.token", token);
      localStorage.setItem("gadget.user", me);
    },
    {
      token: user.token ?? "",
      me: JSON.stringify({ _id: user.userId, email: user.email, name: "Ada" }),
    },
  );
}, 240_000);

afterAll(async () => {
  drone?.close();
  await browser?.close();
  await server?.context.models.User.db.dropDatabase();
  await server?.close();
});

describe("the newcomer's layout findings", () => {
  it("keeps a guard's long outcome on Activity clear of the project link", async () => {
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.goto(`${server.url}/`);
    const row = page.locator(".activity-row", { hasText: prompt });
    const status = row.locator(".activity-status");
    await status.getByText("stopped: tool-call limit").waitFor();
    const pill = await box(status);
    const link = await box(row.locator(".activity-where"));
    expect(pill.x + pill.width).toBeLessThanOrEqual(link.x);
    await screenshot(page, "newcomer-activity-guard");
  }, 60_000);

  for (const viewport of [
    { width: 1440, height: 900 },
    { width: 390, height: 844 },
  ]) {
    it(`folds the session's settings to one line at ${viewport.width} px`, async () => {
      await page.setViewportSize(viewport);
      await page.goto(
        `${server.url}/projects/${workspace.projectId}/sessions/${workspace.sessionId}`,
      );
      const settings = page.locator("details.session-settings");
      await settings.locator("summary").waitFor();
      expect((await box(settings)).height).toBeLessThan(70);
      // Open, it shows the form; folded again, it is one line again.
      await settings.locator("summary").click();
      await page.getByRole("combobox", { name: "Mode" }).waitFor();
      expect((await box(settings)).height).toBeGreaterThan(150);
    }, 60_000);
  }

  it("keeps Files of inside its panel, and puts Delete project last in the settings", async () => {
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.goto(`${server.url}/projects/${workspace.projectId}`);
    const files = page.getByRole("complementary", { name: "Files" });
    const select = files.locator(".files-of select");
    await select.waitFor();
    // The longest choice is a session's long name.
    await expect.poll(async () => (await select.locator("option").count()) >= 3).toBe(true);
    const panel = await box(files);
    const choice = await box(select);
    expect(choice.x + choice.width).toBeLessThanOrEqual(panel.x + panel.width);

    await page.locator("details.project-settings summary").click();
    const remove = page.getByRole("button", { name: "Delete project" });
    await remove.waitFor();
    const rename = await box(page.getByRole("button", { name: "Rename" }));
    const save = await box(page.getByRole("button", { name: "Save settings" }));
    const below = await box(remove);
    expect(below.y).toBeGreaterThan(rename.y + rename.height);
    expect(below.y).toBeGreaterThan(save.y + save.height);
    await screenshot(page, "newcomer-project-settings", { fullPage: true });
  }, 60_000);

  it("does not point 'on the left' on a phone, where the files list is above", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${server.url}/projects/${workspace.projectId}`);
    const idle = page.locator(".editor-panel .empty");
    await idle.waitFor();
    const words = (await idle.textContent()) ?? "";
    expect(words).toContain("Pick a file in the Files list");
    expect(words).not.toContain("on the left");
    const list = await box(page.getByRole("complementary", { name: "Files" }));
    expect(list.y).toBeLessThan((await box(idle)).y);
  }, 60_000);
});
