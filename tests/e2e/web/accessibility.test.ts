// @vitest-environment node
// axe-core (WCAG 2.0/2.1 A and AA rules and its best practices) on the web IDE's main pages in
// real Chromium, against the real server and a scripted drone: login, Activity, a project, a
// session, drones (and its Add a drone panel), providers and the account, at 1440 and 390 px wide,
// in the light and the dark theme. Each page must show no violation; a failure names the page, the
// rule and the elements. Then the session page from the keyboard: skip link, prompt, focus ring.
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { startTestServer, uniqueName } from "@gadget/server/testing";
import { makeTempDir } from "@gadget/testkit";
import { type Browser, buildApp, launchBrowser } from "@gadget/testkit/browser";
import { registerDrone, ScriptedDrone, setupWorkspace, signup } from "@gadget/testkit/wire";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { webDir } from "../paths.ts";

type GadgetServer = Awaited<ReturnType<typeof startTestServer>>;
type User = Awaited<ReturnType<typeof signup>>;
type Workspace = Awaited<ReturnType<typeof setupWorkspace>>;

const axeScript = createRequire(import.meta.url).resolve("axe-core/axe.min.js");
let axeSource: string;
const widths = [
  { name: "1440", viewport: { width: 1440, height: 900 } },
  { name: "390", viewport: { width: 390, height: 844 } },
] as const;
const themes = ["light", "dark"] as const;

let server: GadgetServer;
let user: User;
let workspace: Workspace;
let drone: ScriptedDrone;
let browser: Browser;
let page: Page;

/** The signed-in pages, by name, path and something each shows once loaded. */
function pages(): { name: string; path: string; ready: () => Promise<void> }[] {
  return [
    { name: "activity", path: "/", ready: () => heading("Activity") },
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
      path: `/projects/${workspace.projectId}/sessions/${workspace.sessionId}`,
      ready: () => page.getByRole("textbox", { name: "Prompt" }).waitFor(),
    },
    {
      name: "drones",
      path: "/drones",
      ready: () => page.getByText("scripted-laptop").first().waitFor(),
    },
    {
      name: "add a drone",
      path: "/drones",
      ready: async () => {
        await page.getByText("scripted-laptop").first().waitFor();
        await page.getByRole("button", { name: "Add a drone" }).click();
        await page.getByRole("heading", { name: "Add a drone", level: 2 }).waitFor();
      },
    },
    {
      name: "providers",
      path: "/providers",
      ready: () => page.getByText("http://127.0.0.1:9/v1").first().waitFor(),
    },
    { name: "account", path: "/account", ready: () => heading("Account") },
  ];
}

function heading(name: string): Promise<void> {
  return page.getByRole("heading", { name, exact: true }).waitFor();
}

/** axe's violations on the page as it is, one line each: rule, impact and the elements. */
async function violations(name: string): Promise<string[]> {
  // Evaluated, not a script tag: the app's Content-Security-Policy allows no inline script.
  await page.evaluate(axeSource);
  const found = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (...args: unknown[]) => Promise<unknown> } })
      .axe;
    const result = (await axe.run(document, {
      runOnly: {
        type: "tag",
        values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"],
      },
    })) as {
      violations: { id: string; impact: string; nodes: { target: string[] }[] }[];
    };
    return result.violations.map((violation) => ({
      id: violation.id,
      impact: violation.impact,
      targets: violation.nodes.map((node) => node.target.join(" ")),
    }));
  });
  return found.map(
    (violation) => `${name}: ${violation.id} (${violation.impact}) ${violation.targets.join(", ")}`,
  );
}

beforeAll(async () => {
  axeSource = await readFile(axeScript, "utf8");
  const outDir = path.join(await makeTempDir("gadget-web-a11y-"), "web");
  await buildApp(webDir, outDir);
  server = await startTestServer(
    { mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl"), webDir: outDir },
    uniqueName("web_accessibility"),
  );
  user = await signup(server.url, "ada");
  workspace = await setupWorkspace(user, { projectName: "calculator" });
  const registered = await registerDrone(user, { name: "scripted-laptop" });
  drone = await ScriptedDrone.connect({
    url: server.url,
    droneId: registered.droneId,
    credential: registered.credential,
    workspaces: [workspace.projectSlug],
  });
  browser = await launchBrowser();
  page = browser.page;
  page.setDefaultTimeout(20_000);
}, 120_000);

afterAll(async () => {
  drone?.close();
  await browser?.close();
  await server?.context.models.User.db.dropDatabase();
  await server?.close();
});

describe("accessibility (axe, WCAG 2.1 AA)", () => {
  for (const width of widths) {
    for (const theme of themes) {
      it(`has no violation on the main pages at ${width.name} px in the ${theme} theme`, async () => {
        await page.setViewportSize(width.viewport);
        await page.emulateMedia({ colorScheme: theme });
        const found: string[] = [];
        // The login page, signed out.
        await page.goto(`${server.url}/login`);
        await page.evaluate(() => localStorage.clear());
        await page.goto(`${server.url}/login`);
        await heading("Log in");
        found.push(...(await violations("login")));
        await page.getByLabel("Email").fill(user.email);
        await page.getByLabel("Password").fill("correct horse battery");
        await page.getByRole("button", { name: "Log in" }).click();
        await heading("Activity");
        for (const { name, path: address, ready } of pages()) {
          await page.goto(`${server.url}${address}`);
          await ready();
          found.push(...(await violations(name)));
        }
        expect(found).toEqual([]);
      }, 90_000);
    }
  }

  it("reaches the session's prompt box with the first Tab stop, and shows a focus ring round it", async () => {
    await page.setViewportSize(widths[0].viewport);
    await page.goto(
      `${server.url}/projects/${workspace.projectId}/sessions/${workspace.sessionId}`,
    );
    const prompt = page.getByRole("textbox", { name: "Prompt" });
    await prompt.waitFor();
    await page.keyboard.press("Tab");
    const focused = () =>
      page.evaluate(() => {
        const element = document.activeElement;
        return `${element?.tagName.toLowerCase()} ${element?.getAttribute("aria-label") ?? element?.textContent?.trim()}`;
      });
    expect(await focused()).toBe("a Skip to the prompt");
    await page.keyboard.press("Enter");
    expect(await prompt.evaluate((element) => element === document.activeElement)).toBe(true);
    const ring = await page
      .locator("form.composer")
      .evaluate((form) => getComputedStyle(form).outlineStyle);
    expect(ring).toBe("solid");
  });
});
