// @vitest-environment node
// The Activity page in real Chromium against the real server and two real `gadget-drone`s, with the
// scripted model: turns of two projects, each on its own drone, change state live on the page
// (queued, running with its tool, waiting for approval, finished); the tab title counts the turn
// that waits on the user; it is approved from the Activity page; the drone filter.
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { startTestServer, uniqueName } from "@gadget/server/testing";
import { type ScriptedModel, startScriptedModel } from "@gadget/testkit";
import { type Browser, buildApp, launchBrowser, screenshot } from "@gadget/testkit/browser";
import { type ApiClient, signup } from "@gadget/testkit/wire";
import type { Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { type DroneProcess, startRegisteredDrone } from "../drone/helpers.ts";
import { webDir } from "../paths.ts";

type GadgetServer = Awaited<ReturnType<typeof startTestServer>>;

const apiKey = "sk-activity-e2e";
let server: GadgetServer;
let model: ScriptedModel;
let browser: Browser;
let page: Page;
let scratch: string;
let user: ApiClient & { userId: string; email: string };
const drones: DroneProcess[] = [];
let openBetaGate = () => {};
const betaGate = new Promise<void>((resolve) => {
  openBetaGate = resolve;
});

function git(cwd: string, ...args: string[]): void {
  execFileSync("git", args, {
    cwd,
    stdio: "ignore",
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: "Ada",
      GIT_AUTHOR_EMAIL: "ada@example.test",
      GIT_COMMITTER_NAME: "Ada",
      GIT_COMMITTER_EMAIL: "ada@example.test",
    },
  });
}

/** A bare repository with a README on `main`. */
async function createRemote(name: string): Promise<string> {
  const bare = path.join(scratch, `${name}.git`);
  const work = path.join(scratch, `${name}-work`);
  git(scratch, "init", "--bare", "--initial-branch=main", bare);
  await mkdir(work, { recursive: true });
  git(work, "init", "--initial-branch=main");
  await writeFile(path.join(work, "README.md"), `# ${name}\n`);
  git(work, "add", "-A");
  git(work, "commit", "-m", "initial");
  git(work, "push", bare, "main");
  return pathToFileURL(bare).href;
}

/** A project with one session; returns the session's id. */
async function project(name: string, approval: "auto" | "on-write"): Promise<string> {
  const created = await user.post("/api/projects", { name, gitUrl: await createRemote(name) });
  expect(created.status).toBe(201);
  const session = await user.post(`/api/projects/${created.body.project._id}/sessions`, {
    name: `${name} work`,
    approval,
  });
  expect(session.status).toBe(201);
  return String(session.body.session._id);
}

const row = (prompt: string) => page.locator(".activity-row", { hasText: prompt });

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), "gadget-activity-"));
  model = await startScriptedModel({ apiKey });
  // Each turn's replies by its prompt, however the two turns' requests interleave.
  model.setHandler(async (request) => {
    const text = JSON.stringify(request.body.messages);
    const passes = request.body.messages.filter((message) => message.role === "assistant").length;
    if (!request.body.tools?.length) return { text: "Summary." };
    if (text.includes("ALPHA")) {
      if (passes === 0) {
        return {
          toolCalls: [{ name: "write_file", arguments: { path: "NOTES.md", content: "alpha\n" } }],
        };
      }
      return { text: "Alpha is done." };
    }
    if (text.includes("BETA")) {
      if (passes === 0)
        return { toolCalls: [{ name: "read_file", arguments: { path: "README.md" } }] };
      await betaGate;
      return { text: "Beta is done." };
    }
    return { text: "Nothing more to do." };
  });
  const outDir = path.join(scratch, "web");
  await buildApp(webDir, outDir);
  server = await startTestServer(
    {
      mongoUrl: inject("mongoUrl"),
      redisUrl: inject("redisUrl"),
      webDir: outDir,
      droneGraceMs: 30_000,
      droneRequestTimeoutMs: 10_000,
    },
    uniqueName("web_activity"),
  );
  user = await signup(server.url, "ada");
  browser = await launchBrowser();
  page = browser.page;
  page.setDefaultTimeout(30_000);
}, 180_000);

afterAll(async () => {
  openBetaGate();
  for (const drone of drones) {
    drone.child.kill("SIGTERM");
    drone.child.kill("SIGTERM");
  }
  await Promise.all(drones.map((drone) => drone.exited));
  await browser?.close();
  await server?.close();
  await model?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

// A failed step leaves what the page showed.
afterEach(async (context) => {
  if (context.task.result?.state !== "fail" || !page) return;
  await screenshot(page, `failed-activity-${context.task.name.slice(0, 30).replace(/\W+/g, "-")}`);
  console.error(`page text: ${await page.locator("body").textContent()}`);
});

describe("Activity page", () => {
  it("shows turns of two projects on two drones change state live, counts the one waiting on the user in the title, and approves it in place", async () => {
    const [first, second] = await Promise.all([
      startRegisteredDrone(user, server.url, "laptop"),
      startRegisteredDrone(user, server.url, "build-box"),
    ]);
    drones.push(first.drone, second.drone);
    const { body: listed } = await user.get("/api/drones");
    const droneId = (name: string) =>
      (listed.drones as Array<{ _id: string; name: string }>).find((drone) => drone.name === name)!
        ._id;
    const provider = await user.post("/api/providers", {
      name: "Scripted",
      baseUrl: model.baseUrl,
      apiKey,
      modelId: "scripted-model",
    });
    expect(provider.status).toBe(201);
    const providerId = String(provider.body.provider._id);
    const alphaSession = await project("alpha", "on-write");
    const betaSession = await project("beta", "auto");

    // The browser is logged in as the user and opens the home page: Activity.
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
    await page.goto(`${server.url}/`);
    await page.getByRole("heading", { name: "Activity" }).waitFor();
    // Nothing has run yet: the empty Activity page shows the first-run steps.
    await page.getByRole("region", { name: "Get started" }).waitFor();

    const alpha = await user.post(`/api/sessions/${alphaSession}/turns`, {
      prompt: "ALPHA: write the notes",
      providerId,
      droneId: droneId("laptop"),
    });
    const beta = await user.post(`/api/sessions/${betaSession}/turns`, {
      prompt: "BETA: read the readme",
      providerId,
      droneId: droneId("build-box"),
    });
    expect([alpha.status, beta.status]).toEqual([202, 202]);

    // Both appear without a reload; beta runs its tool and waits on the model on its second
    // pass, alpha waits for the user's approval, which the title counts.
    const alphaRow = row("ALPHA: write the notes");
    const betaRow = row("BETA: read the readme");
    await expect
      .poll(() => betaRow.getAttribute("data-status"), { timeout: 60_000 })
      .toBe("processing");
    await betaRow.getByText("pass 2").waitFor({ timeout: 60_000 });
    await expect(betaRow.textContent()).resolves.toMatch(/beta \/ beta work.*build-box/);
    await expect
      .poll(() => alphaRow.getAttribute("data-status"), { timeout: 60_000 })
      .toBe("awaiting_approval");
    const card = alphaRow.getByRole("group", { name: "Approval for write_file" });
    await card.waitFor();
    await expect.poll(() => page.title()).toBe("(1) Gadget Code");
    await expect(page.getByRole("link", { name: /Your turns:/ }).textContent()).resolves.toBe(
      "1 running · 1 needs you",
    );
    expect(await page.locator('link[rel="icon"]').getAttribute("data-running")).toBe("true");
    await screenshot(page, "activity-live");

    // The drone filter shows only that drone's turns.
    await page.getByLabel("Drone").selectOption({ label: "build-box" });
    await expect.poll(() => page.locator(".activity-row").count()).toBe(1);
    await betaRow.waitFor();
    await page.getByLabel("Drone").selectOption({ label: "All drones" });
    await alphaRow.getByRole("group", { name: "Approval for write_file" }).waitFor();

    // Approved from here: the turn goes on and finishes; the title loses its count.
    await alphaRow.getByRole("button", { name: "Approve" }).click();
    await expect
      .poll(() => alphaRow.getAttribute("data-status"), { timeout: 60_000 })
      .toBe("completed");
    await expect.poll(() => page.title()).toBe("Gadget Code");
    await expect(alphaRow.textContent()).resolves.toMatch(
      /Completed.*alpha \/ alpha work.*1 file changed/,
    );

    openBetaGate();
    await expect
      .poll(() => betaRow.getAttribute("data-status"), { timeout: 60_000 })
      .toBe("completed");
    await expect
      .poll(() => page.locator('link[rel="icon"]').getAttribute("data-running"))
      .toBe("false");
    await expect(page.getByRole("link", { name: /Your turns:/ }).count()).resolves.toBe(0);
    await screenshot(page, "activity-finished");
  }, 240_000);
});
