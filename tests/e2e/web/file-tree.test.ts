// @vitest-environment node
// The project page's file tree while no drone can list it, in real Chromium against the real
// server and a scripted drone: it says why (no drone online, none with a checkout) and fills in on
// its own once a drone comes online and holds the checkout, with no click and no reload.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { FileRequest } from "@gadget/protocol";
import { startTestServer, uniqueName } from "@gadget/server/testing";
import { type Browser, buildApp, launchBrowser, screenshot } from "@gadget/testkit/browser";
import { registerDrone, ScriptedDrone, setupWorkspace, signup } from "@gadget/testkit/wire";
import type { Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { webDir } from "../paths.ts";

type GadgetServer = Awaited<ReturnType<typeof startTestServer>>;

let scratch: string;
let server: GadgetServer;
let drone: ScriptedDrone | undefined;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), "gadget-web-tree-"));
  const outDir = path.join(scratch, "web");
  await buildApp(webDir, outDir);
  server = await startTestServer(
    { mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl"), webDir: outDir },
    uniqueName("web_file_tree"),
  );
  browser = await launchBrowser();
  page = browser.page;
  page.setDefaultTimeout(20_000);
});

afterAll(async () => {
  drone?.close();
  await browser?.close();
  await server?.context.models.User.db.dropDatabase();
  await server?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

afterEach(async (context) => {
  if (context.task.result?.state === "fail" && page) {
    await screenshot(page, `failed-tree-${context.task.name.slice(0, 30).replace(/\W+/g, "-")}`);
  }
});

describe("the project page's file tree without a drone to list it", () => {
  it("says why, and fills in on its own once a drone comes online holding the checkout", async () => {
    const user = await signup(server.url, "tree");
    const workspace = await setupWorkspace(user, { projectName: "calculator" });
    await page.goto(`${server.url}/login`);
    await page.getByLabel("Email").fill(user.email);
    await page.getByLabel("Password").fill("correct horse battery");
    await page.getByRole("button", { name: "Log in" }).click();
    await page.getByRole("link", { name: "Projects", exact: true }).waitFor();
    await page.goto(`${server.url}/projects/${workspace.projectId}`);
    const tree = page.getByRole("navigation", { name: "Files" });
    await tree.getByRole("status").getByText("No drone of yours is online.").waitFor();

    // The drone's list of checkouts, as its heartbeats tell it: empty until it clones.
    const checkouts: string[] = [];
    const listed: FileRequest[] = [];
    const registered = await registerDrone(user, { name: "scripted-laptop" });
    drone = await ScriptedDrone.connect({
      url: server.url,
      droneId: registered.droneId,
      credential: registered.credential,
      workspaces: checkouts,
      onFileRequest: (request: FileRequest) => {
        listed.push(request);
        const entry = { name: "README.md", path: "README.md", type: "file" as const };
        return { ok: true, result: { entries: [{ ...entry, size: 9 }] } };
      },
    });
    await tree
      .getByRole("status")
      .getByText(/No online drone has a checkout of this project yet/)
      .waitFor();
    expect(listed).toEqual([]);

    checkouts.push(workspace.projectSlug);
    await drone.heartbeat();
    await tree.getByRole("button", { name: "README.md" }).waitFor();
    expect(listed.map((request) => request.op)).toEqual(["list"]);
    expect(await tree.getByRole("status").count()).toBe(0);
  }, 90_000);
});
