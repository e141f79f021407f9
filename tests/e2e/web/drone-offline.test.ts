// @vitest-environment node
// A drone lost mid-turn, in real Chromium against the real server: the session page says "Drone
// offline" with the time left before the turn is interrupted, Activity says "drone offline", and
// both stop saying it when the drone is back.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { agentEvent } from "@gadget/protocol";
import { startTestServer, uniqueName } from "@gadget/server/testing";
import { type Browser, buildApp, launchBrowser, screenshot } from "@gadget/testkit/browser";
import { registerDrone, ScriptedDrone, setupWorkspace, signup } from "@gadget/testkit/wire";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { webDir } from "../paths.ts";

type GadgetServer = Awaited<ReturnType<typeof startTestServer>>;

let scratch: string;
let server: GadgetServer;
const drones: ScriptedDrone[] = [];
let browser: Browser;
let page: Page;

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), "gadget-web-offline-"));
  const outDir = path.join(scratch, "web");
  await buildApp(webDir, outDir);
  server = await startTestServer(
    {
      mongoUrl: inject("mongoUrl"),
      redisUrl: inject("redisUrl"),
      webDir: outDir,
      droneGraceMs: 120_000,
    },
    uniqueName("web_drone_offline"),
  );
  browser = await launchBrowser({ viewport: { width: 1440, height: 900 } });
  page = browser.page;
}, 180_000);

afterAll(async () => {
  for (const drone of drones) drone.close();
  await browser?.close();
  await server?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe("a lost drone in the web IDE", () => {
  it("shows the turn's drone offline with the time left, on the session page and in Activity", async () => {
    const user = await signup(server.url, "grace");
    const workspace = await setupWorkspace(user, { projectName: "offline" });
    const registered = await registerDrone(user, { name: "wobbly" });
    const drone = await ScriptedDrone.connect({
      url: server.url,
      droneId: registered.droneId,
      credential: registered.credential,
    });
    drones.push(drone);
    const created = await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
      prompt: "Work for a while",
      providerId: workspace.providerId,
    });
    const turnId = String(created.body.turn._id);
    await drone.nextWorkOrder(20_000);
    await drone.stream(turnId, [
      agentEvent("status", { message: "Pass 1", pass: 1, phase: "model" }),
      agentEvent("token", { text: "Looking at the code" }),
    ]);

    await page.goto(`${server.url}/login`);
    await page.getByLabel("Email").fill(user.email);
    await page.getByLabel("Password").fill("correct horse battery");
    await page.getByRole("button", { name: "Log in" }).click();
    await page.waitForURL(`${server.url}/`);
    await page.goto(
      `${server.url}/projects/${workspace.projectId}/sessions/${workspace.sessionId}`,
    );
    await page.getByText("Looking at the code").first().waitFor();

    drone.close();
    const note = page.getByRole("status").filter({ hasText: "Drone offline" });
    await note.waitFor({ timeout: 10_000 });
    expect(await note.textContent()).toMatch(/wobbly lost its connection.*interrupted in \d+:\d\d/);
    await page.locator(".status-word", { hasText: "Drone offline" }).waitFor();
    await screenshot(page, "drone-offline-session");

    await page.goto(`${server.url}/`);
    const row = page.locator(`[data-turn-id="${turnId}"]`);
    await row.getByText("drone offline").waitFor({ timeout: 10_000 });
    expect(await row.textContent()).toMatch(/interrupted in \d+:\d\d unless it comes back/);
    await screenshot(page, "drone-offline-activity");

    // Back: the turn goes on, and nothing says offline any more.
    const back = await drone.reconnect({ activeTurns: [turnId] });
    drones.push(back);
    await row.getByText("drone offline").waitFor({ state: "detached", timeout: 10_000 });
  }, 120_000);
});
