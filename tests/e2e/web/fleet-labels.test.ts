// @vitest-environment node
// Drone labels in real Chromium against the real server: the drones page shows a drone's labels
// (its own in grey) and edits the user's; a turn requiring a label no drone has says so on its
// session page, and starts the moment the user gives a drone that label on the drones page.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { startTestServer, uniqueName } from "@gadget/server/testing";
import { type Browser, buildApp, launchBrowser, screenshot } from "@gadget/testkit/browser";
import { registerDrone, ScriptedDrone, setupWorkspace, signup } from "@gadget/testkit/wire";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { webDir } from "../paths.ts";

type GadgetServer = Awaited<ReturnType<typeof startTestServer>>;

let scratch: string;
let server: GadgetServer;
let drone: ScriptedDrone;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), "gadget-web-fleet-"));
  const outDir = path.join(scratch, "web");
  await buildApp(webDir, outDir);
  server = await startTestServer(
    { mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl"), webDir: outDir },
    uniqueName("web_fleet_labels"),
  );
  browser = await launchBrowser({ viewport: { width: 1440, height: 900 } });
  page = browser.page;
}, 180_000);

afterAll(async () => {
  drone?.close();
  await browser?.close();
  await server?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe("drone labels in the web IDE", () => {
  it("shows and edits a drone's labels, and a turn waiting for one starts once a drone has it", async () => {
    const user = await signup(server.url, "ada");
    const workspace = await setupWorkspace(user, { projectName: "renderer" });
    const registered = await registerDrone(user, { name: "build-box", labels: ["region=eu"] });
    drone = await ScriptedDrone.connect({
      url: server.url,
      droneId: registered.droneId,
      credential: registered.credential,
      labels: ["os=linux", "arch=x64", "sandbox=bubblewrap"],
    });
    const created = await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
      prompt: "Render the scene on a GPU",
      providerId: workspace.providerId,
      requires: ["gpu"],
    });
    expect(created.status).toBe(202);

    await page.goto(`${server.url}/login`);
    await page.getByLabel("Email").fill(user.email);
    await page.getByLabel("Password").fill("correct horse battery");
    await page.getByRole("button", { name: "Log in" }).click();
    await page.waitForURL(`${server.url}/`);
    await page.goto(
      `${server.url}/projects/${workspace.projectId}/sessions/${workspace.sessionId}`,
    );
    await page
      .getByText("Waiting for a drone with label gpu: no online drone of yours has it")
      .first()
      .waitFor();
    await screenshot(page, "fleet-waiting-turn");

    await page.goto(`${server.url}/drones`);
    const row = page.getByRole("row", { name: /build-box/ });
    await row.getByText("region=eu").waitFor();
    await expect.poll(async () => (await row.textContent()) ?? "").toContain("os=linux");
    await row.getByRole("button", { name: "Edit" }).click();
    const input = row.getByRole("textbox", { name: "Labels" });
    expect(await input.inputValue()).toBe("region=eu");
    await input.fill("region=eu gpu");
    await row.getByRole("button", { name: "Save" }).click();
    await row.getByText("gpu", { exact: true }).waitFor();
    await screenshot(page, "fleet-drone-labels");

    // The waiting turn went to the drone the moment it had the label.
    const order = await drone.nextWorkOrder(20_000);
    expect(order.turnId).toBe(String(created.body.turn._id));
  }, 120_000);
});
