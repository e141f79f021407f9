// @vitest-environment node
// Every page of the web IDE on a phone (390×844) in real Chromium, against the real server and a
// scripted drone: nothing scrolls sideways, the top bar folds into a menu that reaches Log out,
// tables read as stacked lists, tool rows keep whole names, the project page shows its sessions
// first, and finished turns tell the truth (a guard's stop, a clone's cause). Then the same pages
// at 1440×900: the wide layout is unchanged (bar links in place, tables as tables).
import { createHash } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { AgentEvent, FileRequest } from "@gadget/protocol";
import { startTestServer, uniqueName, WebhookReceiver } from "@gadget/server/testing";
import { type Browser, buildApp, launchBrowser, screenshot } from "@gadget/testkit/browser";
import { registerDrone, ScriptedDrone, setupWorkspace, signup } from "@gadget/testkit/wire";
import type { Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { webDir } from "../paths.ts";

type GadgetServer = Awaited<ReturnType<typeof startTestServer>>;
type User = Awaited<ReturnType<typeof signup>>;
type Workspace = Awaited<ReturnType<typeof setupWorkspace>>;

const phone = { width: 390, height: 844 };
const desktop = { width: 1440, height: 900 };
const readme = "# Demo\n\nA project to open in the editor.\n";
const guardPrompt = "Update the changelog and the contributing guide";
const clonePrompt = "Fix the failing build";

let scratch: string;
let server: GadgetServer;
let receiver: WebhookReceiver;
let user: User;
let workspace: Workspace;
let drone: ScriptedDrone;
let browser: Browser;
let page: Page;

/** The pages a signed-in user reaches, by name, path and something each shows once loaded. */
function pages(): { name: string; path: string; ready: () => Promise<void> }[] {
  const session = `/projects/${workspace.projectId}/sessions/${workspace.sessionId}`;
  return [
    { name: "activity", path: "/", ready: () => heading("Activity") },
    { name: "projects", path: "/projects", ready: () => heading("Projects") },
    {
      name: "project",
      path: `/projects/${workspace.projectId}`,
      ready: () =>
        page
          .getByRole("link", { name: /Session/ })
          .first()
          .waitFor(),
    },
    {
      name: "session",
      path: session,
      ready: () => page.locator(".status-line[data-guard]").waitFor(),
    },
    {
      name: "drones",
      path: "/drones",
      ready: () => page.getByText("scripted-laptop").first().waitFor(),
    },
    {
      name: "providers",
      path: "/providers",
      ready: () => page.getByText("http://127.0.0.1:9/v1").first().waitFor(),
    },
    { name: "account", path: "/account", ready: () => heading("Account") },
    {
      name: "webhooks",
      path: "/webhooks",
      ready: () => page.getByRole("table", { name: "Recent deliveries" }).waitFor(),
    },
  ];
}

function heading(name: string): Promise<void> {
  return page.getByRole("heading", { name, exact: true }).waitFor();
}

/** How wide the document is, and the widest elements past the viewport (to say what overflows). */
async function overflow(): Promise<{ width: number; culprits: string[] }> {
  return page.evaluate(() => {
    const limit = window.innerWidth;
    const culprits = [...document.querySelectorAll("body *")]
      .filter((element) => element.getBoundingClientRect().right > limit + 0.5)
      .slice(0, 8)
      .map(
        (element) =>
          `${element.tagName.toLowerCase()}.${String(element.className).replace(/\s+/g, ".")} → ${Math.round(element.getBoundingClientRect().right)}`,
      );
    return { width: document.documentElement.scrollWidth, culprits };
  });
}

/** Asserts that the page does not scroll sideways at the current viewport. */
async function expectNoSidewaysScroll(width: number): Promise<void> {
  const measured = await overflow();
  expect(
    measured.width,
    `wider than ${width}: ${measured.culprits.join(", ")}`,
  ).toBeLessThanOrEqual(width);
}

/** Streams a finished turn of `prompt` through the scripted drone. */
async function finishedTurn(prompt: string, events: AgentEvent[]): Promise<void> {
  const created = await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
    prompt,
    providerId: workspace.providerId,
  });
  expect(created.status).toBe(202);
  const order = await drone.nextWorkOrder(20_000);
  expect(order.turnId).toBe(String(created.body.turn._id));
  await drone.stream(order.turnId, events);
}

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), "gadget-web-phone-"));
  const outDir = path.join(scratch, "web");
  await buildApp(webDir, outDir);
  // The webhook receiver listens on loopback: this server may reach private addresses.
  server = await startTestServer(
    {
      mongoUrl: inject("mongoUrl"),
      redisUrl: inject("redisUrl"),
      webDir: outDir,
      allowPrivateNetwork: true,
    },
    uniqueName("web_phone_layout"),
  );
  user = await signup(server.url, "ada");
  workspace = await setupWorkspace(user, { projectName: "calculator-with-a-long-name" });
  const registered = await registerDrone(user, { name: "scripted-laptop" });
  drone = await ScriptedDrone.connect({
    url: server.url,
    droneId: registered.droneId,
    credential: registered.credential,
    workspaces: [workspace.projectSlug],
    onFileRequest: (request: FileRequest) => {
      if (request.op === "list") {
        const entry = { name: "README.md", path: "README.md", type: "file" as const };
        return { ok: true, result: { entries: [{ ...entry, size: readme.length }] } };
      }
      if (request.op === "read" && request.path === "README.md") {
        const sha = createHash("sha1").update(readme).digest("hex");
        return { ok: true, result: { path: "README.md", content: readme, sha } };
      }
      return { ok: false, error: { code: "not_found", message: `${request.path} not found` } };
    },
  });

  // A turn with tool rows whose names and arguments are long, stopped by a guard.
  const tools: AgentEvent[] = [
    ["read_file", { path: "CHANGELOG.md" }],
    ["search_files", { pattern: "deprecated configuration option", path: "docs/reference" }],
    ["declare_intent", { intent: "Rewrite the contributing guide's release section" }],
    ["run_command", { command: "node scripts/check-changelog-format.mjs --strict --all" }],
  ].flatMap(([tool, params], index): AgentEvent[] => [
    { type: "tool_start", data: { callId: `c${index}`, tool: String(tool), params } },
    {
      type: "tool_result",
      data: {
        callId: `c${index}`,
        tool: String(tool),
        ok: true,
        summary: `Created CHANGELOG-entry-${index}.md with the release notes of every package`,
      },
    },
  ]);
  await finishedTurn(guardPrompt, [
    { type: "status", data: { message: "Pass 1", pass: 1, model: "scripted-model" } },
    { type: "token", data: { text: "Reading the changelog first, then it is tested." } },
    ...tools,
    { type: "status", data: { message: "Pass 2", pass: 2, model: "scripted-model" } },
    { type: "token", data: { text: "Found it: the same two files again." } },
    {
      type: "cost_update",
      data: {
        totalCost: 0,
        tokens: { input: 5200, output: 800, reasoning: 0, cached: 0 },
        priced: false,
      },
    },
    { type: "response", data: { message: "I kept reading the same two files; stopping here." } },
    { type: "done", data: { reason: "all_tools_duplicate", passes: 2, totalCost: 0 } },
  ]);
  // A turn whose clone failed: the error box carries git's cause.
  await finishedTurn(clonePrompt, [
    {
      type: "error",
      data: {
        code: "clone_failed",
        message:
          "Could not clone https://git.example/ada/calculator-with-a-long-name.git: remote: Repository not found.\nfatal: repository 'https://git.example/ada/calculator-with-a-long-name.git/' not found",
      },
    },
    { type: "done", data: { reason: "error", passes: 0, totalCost: 0 } },
  ]);

  receiver = await WebhookReceiver.start();
  const webhook = await user.post("/api/webhooks", {
    url: receiver.url,
    events: ["turn.completed", "turn.failed", "turn.awaiting_approval"],
  });
  expect(webhook.status).toBe(201);
  receiver.secret = String(webhook.body.secret);
  expect((await user.post(`/api/webhooks/${webhook.body.webhook._id}/test`, {})).status).toBe(202);

  browser = await launchBrowser({ viewport: phone });
  page = browser.page;
  page.setDefaultTimeout(20_000);
}, 120_000);

afterAll(async () => {
  drone?.close();
  await browser?.close();
  await receiver?.close();
  await server?.context.models.User.db.dropDatabase();
  await server?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

afterEach(async (context) => {
  if (context.task.result?.state === "fail" && page) {
    await screenshot(page, `failed-phone-${context.task.name.slice(0, 30).replace(/\W+/g, "-")}`);
  }
});

describe("the web IDE on a phone (390×844)", () => {
  it("logs in without scrolling sideways", async () => {
    await page.goto(`${server.url}/login`);
    await heading("Log in");
    await expectNoSidewaysScroll(phone.width);
    await screenshot(page, "phone-login");
    await page.getByLabel("Email").fill(user.email);
    await page.getByLabel("Password").fill("correct horse battery");
    await page.getByRole("button", { name: "Log in" }).click();
    // Logging in lands on Activity.
    await heading("Activity");
  });

  it("shows every page without sideways scrolling, its top bar folded into a menu that reaches Log out", async () => {
    for (const { name, path: address, ready } of pages()) {
      await page.goto(`${server.url}${address}`);
      await ready();
      await expectNoSidewaysScroll(phone.width);
      // The bar's links are in the menu, not beside the brand.
      const menu = page.getByRole("button", { name: "Menu" });
      expect(await menu.getAttribute("aria-expanded")).toBe("false");
      expect(await page.getByRole("button", { name: "Log out", exact: true }).isVisible()).toBe(
        false,
      );
      await screenshot(page, `phone-${name}`);
      await menu.click();
      await page
        .getByRole("button", { name: "Log out", exact: true })
        .waitFor({ state: "visible" });
      await expectNoSidewaysScroll(phone.width);
      if (name === "projects") await screenshot(page, "phone-menu");
      await menu.click();
      await page.getByRole("button", { name: "Log out", exact: true }).waitFor({ state: "hidden" });
    }
  }, 120_000);

  it("goes to another page from the menu, which then closes", async () => {
    await page.goto(`${server.url}/projects`);
    await page.getByRole("button", { name: "Menu" }).click();
    await page.getByRole("link", { name: "Webhooks", exact: true }).click();
    await heading("Webhooks");
    expect(await page.getByRole("link", { name: "Drones", exact: true }).isVisible()).toBe(false);
  });

  it("lists drones and providers as stacked cards with each value named", async () => {
    await page.goto(`${server.url}/drones`);
    const drone = page.getByRole("row", { name: /scripted-laptop/ });
    await drone.waitFor();
    // The column heads are left to screen readers; each cell names its column instead.
    expect((await page.locator("table thead").boundingBox())?.height).toBeLessThanOrEqual(1);
    const version = drone.locator("td[data-label=Version]");
    const label = await version.evaluate((cell) => getComputedStyle(cell, "::before").content);
    expect(label).toBe('"Version: "');
    const box = await drone.boundingBox();
    expect(box?.width).toBeLessThanOrEqual(phone.width);

    await page.goto(`${server.url}/providers`);
    const provider = page.getByRole("row", { name: /scripted/ });
    await provider.getByText("http://127.0.0.1:9/v1").waitFor();
    expect((await provider.boundingBox())?.width).toBeLessThanOrEqual(phone.width);
  });

  it("puts the project's sessions first and no screen-tall empty editor", async () => {
    await page.goto(`${server.url}/projects/${workspace.projectId}`);
    const sessions = page.locator(".sessions-panel");
    await sessions.getByRole("link", { name: /Session/ }).waitFor();
    const files = page.getByRole("navigation", { name: "Files" });
    await files.getByRole("button", { name: "README.md" }).waitFor();
    const sessionsBox = await sessions.boundingBox();
    const filesBox = await files.boundingBox();
    expect(sessionsBox?.y).toBeLessThan(filesBox?.y ?? 0);
    // The session list starts within the first screen.
    expect(sessionsBox?.y).toBeLessThan(phone.height);
    const editor = await page.locator(".editor-panel").boundingBox();
    expect(editor?.height).toBeLessThan(phone.height / 3);
  });

  it("wraps tool rows with whole names and shows the truth of finished turns", async () => {
    await page.goto(
      `${server.url}/projects/${workspace.projectId}/sessions/${workspace.sessionId}`,
    );
    const guarded = page.locator("article.turn", {
      has: page.locator(".prompt-bubble", { hasText: guardPrompt }),
    });
    await guarded
      .locator(".status-line")
      .getByText("Stopped by a guard: it repeated the same tool calls")
      .waitFor();
    await guarded.getByRole("button", { name: "Show steps and changes" }).click();
    const names = guarded.locator(".tool-row .tool-name");
    await expect.poll(() => names.count()).toBe(4);
    expect(await names.allTextContents()).toEqual([
      "read_file",
      "search_files",
      "declare_intent",
      "run_command",
    ]);
    // Nothing cut: every name and result is shown whole, on as many lines as it needs (the
    // arguments are whole in the row's details).
    const cut = await guarded
      .locator(".tool-name, .tool-summary")
      .evaluateAll((cells) =>
        cells
          .filter((cell) => cell.scrollWidth > cell.clientWidth + 1)
          .map((cell) => cell.textContent),
      );
    expect(cut).toEqual([]);
    expect(await guarded.locator(".meter", { hasText: "Cost" }).textContent()).toBe("Cost—");
    await expectNoSidewaysScroll(phone.width);
    await guarded.locator(".tool-list").scrollIntoViewIfNeeded();
    await screenshot(page, "phone-session-tools");

    const failed = page.locator("article.turn", {
      has: page.locator(".prompt-bubble", { hasText: clonePrompt }),
    });
    const box = failed.getByRole("alert", { name: "Could not clone the project" });
    await box.getByText(/fatal: repository '.*' not found/).waitFor();
    expect(await box.locator(".error-cause").textContent()).toMatch(
      /Repository not found\.\nfatal: .* not found clone_failed$/,
    );
    await expectNoSidewaysScroll(phone.width);
    await box.scrollIntoViewIfNeeded();
    await screenshot(page, "phone-session-error");
  }, 60_000);
});

describe("the same pages on a wide screen (1440×900)", () => {
  it("keeps the top bar's links in place and tables as tables, without sideways scrolling", async () => {
    await page.setViewportSize(desktop);
    for (const { name, path: address, ready } of pages()) {
      await page.goto(`${server.url}${address}`);
      await ready();
      await expectNoSidewaysScroll(desktop.width);
      expect(await page.getByRole("button", { name: "Menu" }).isVisible()).toBe(false);
      expect(await page.getByRole("button", { name: "Log out", exact: true }).isVisible()).toBe(
        true,
      );
      for (const link of ["Projects", "Drones", "Providers", "Webhooks"]) {
        const bar = page.getByRole("banner");
        expect(await bar.getByRole("link", { name: link, exact: true }).isVisible()).toBe(true);
      }
      const tables = page.locator("table.table thead");
      if ((await tables.count()) > 0) expect(await tables.first().isVisible()).toBe(true);
      if (["session", "project", "drones", "webhooks", "activity"].includes(name))
        await screenshot(page, `desktop-${name}`);
    }
    // The wide tool rows stay one line each: icon, name, arguments, result and time side by side.
    await page.goto(
      `${server.url}/projects/${workspace.projectId}/sessions/${workspace.sessionId}`,
    );
    const guarded = page.locator("article.turn", {
      has: page.locator(".prompt-bubble", { hasText: guardPrompt }),
    });
    await guarded.getByRole("button", { name: "Show steps and changes" }).click();
    const row = guarded.locator(".tool-row-head").first();
    await row.waitFor();
    expect((await row.boundingBox())?.height).toBeLessThan(40);
  }, 120_000);

  it("logs out from the phone's menu", async () => {
    await page.setViewportSize(phone);
    await page.goto(`${server.url}/projects`);
    await page.getByRole("button", { name: "Menu" }).click();
    await page.getByRole("button", { name: "Log out", exact: true }).click();
    await heading("Log in");
  });
});
