// @vitest-environment node
// Smoke test in real headless Chromium: the built app, served with the SPA fallback, loads on any
// client route, shows the login page, and says in words that the API cannot be reached.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  type Browser,
  buildApp,
  launchBrowser,
  type StaticServer,
  screenshot,
  serveStatic,
} from "@gadget/testkit/browser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webDir } from "./web-dir.ts";

let outDir: string;
let site: StaticServer;
let browser: Browser;

beforeAll(async () => {
  outDir = await mkdtemp(path.join(tmpdir(), "gadget-web-e2e-"));
  await buildApp(webDir, outDir);
  site = await serveStatic(outDir);
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  await site?.close();
  if (outDir) await rm(outDir, { recursive: true, force: true });
});

describe("web app in Chromium", () => {
  it("loads on a deep link, sends the visitor to log in and remembers where to go", async () => {
    const { page } = browser;
    const failures: string[] = [];
    page.on("pageerror", (error) => failures.push(error.message));
    await page.goto(`${site.url}/projects/abc/sessions/def`);
    await page.getByRole("heading", { name: "Log in" }).waitFor();
    expect(new URL(page.url()).pathname).toBe("/login");
    expect(new URL(page.url()).searchParams.get("next")).toBe("/projects/abc/sessions/def");
    await screenshot(page, "login");
    expect(failures).toEqual([]);
  });

  it("says in words that the server cannot be reached when logging in", async () => {
    const { page } = browser;
    await page.getByLabel("Email").fill("ada@example.test");
    await page.getByLabel("Password").fill("correct horse battery");
    await page.getByRole("button", { name: "Log in" }).click();
    const alert = page.getByRole("alert");
    await alert.waitFor();
    expect(await alert.textContent()).toContain("Cannot reach the Gadget Code server");
    await screenshot(page, "login-unreachable");
  });

  it("shows the sign-up form in dark colours", async () => {
    const { page } = browser;
    await page.emulateMedia({ colorScheme: "dark" });
    await page.goto(`${site.url}/signup`);
    await page.getByRole("heading", { name: "Create your account" }).waitFor();
    const background = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    expect(background).toBe("rgb(15, 18, 22)");
    await screenshot(page, "signup-dark");
    await page.emulateMedia({ colorScheme: "light" });
  });

  it("loads no code from anywhere but its own server", async () => {
    const { page } = browser;
    const origins = new Set<string>();
    page.on("request", (request) => origins.add(new URL(request.url()).origin));
    await page.goto(`${site.url}/login`);
    await page.getByRole("heading", { name: "Log in" }).waitFor();
    expect([...origins]).toEqual([site.url]);
  });
});
