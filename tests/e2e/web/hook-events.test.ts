// @vitest-environment node
// A turn's project hooks in real Chromium against the real server and a scripted drone: the
// PreToolUse hook that blocked a command and the Stop hook that kept the turn going are shown in
// the turn's activity with their command, outcome and time, and a row opens to what they printed.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { AgentEvent } from "@gadget/protocol";
import { startTestServer, uniqueName } from "@gadget/server/testing";
import { type Browser, buildApp, launchBrowser, screenshot } from "@gadget/testkit/browser";
import { registerDrone, ScriptedDrone, setupWorkspace, signup } from "@gadget/testkit/wire";
import type { Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { webDir } from "../paths.ts";

type GadgetServer = Awaited<ReturnType<typeof startTestServer>>;

let scratch: string;
let server: GadgetServer;
let user: Awaited<ReturnType<typeof signup>>;
let workspace: Awaited<ReturnType<typeof setupWorkspace>>;
let drone: ScriptedDrone;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), "gadget-web-hooks-"));
  const outDir = path.join(scratch, "web");
  await buildApp(webDir, outDir);
  server = await startTestServer(
    { mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl"), webDir: outDir },
    uniqueName("web_hook_events"),
  );
  user = await signup(server.url, "hooks");
  workspace = await setupWorkspace(user);
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
    await screenshot(page, `failed-hooks-${context.task.name.slice(0, 30).replace(/\W+/g, "-")}`);
  }
});

describe("hook events in the turn's activity", () => {
  it("shows the hooks that ran: which, for what, what they came to and how long they took", async () => {
    await page.goto(`${server.url}/`);
    await page.getByLabel("Email").fill(user.email);
    await page.getByLabel("Password").fill("correct horse battery");
    await page.getByRole("button", { name: "Log in" }).click();
    await page.getByRole("link", { name: "Projects", exact: true }).waitFor();
    await page.goto(
      `${server.url}/projects/${workspace.projectId}/sessions/${workspace.sessionId}`,
    );
    const prompt = "Clean up the build folder";
    const box = page.getByRole("textbox", { name: "Prompt" });
    await box.fill(prompt);
    await box.press("Enter");
    const order = await drone.nextWorkOrder(20_000);

    const events: AgentEvent[] = [
      { type: "status", data: { message: "Pass 1", pass: 1, phase: "model" } },
      {
        type: "hook",
        data: {
          event: "PreToolUse",
          command: "node .gadget/guard.mjs",
          ok: true,
          outcome: "blocked",
          ms: 42,
          output: "Deleting files with rm is not allowed here; use git rm.",
          callId: "c1",
          tool: "run_command",
        },
      },
      {
        type: "tool_start",
        data: { callId: "c1", tool: "run_command", params: { command: "rm -r build" } },
      },
      {
        type: "tool_result",
        data: {
          callId: "c1",
          tool: "run_command",
          ok: false,
          summary: "blocked by a project hook",
        },
      },
      { type: "status", data: { message: "Pass 2", pass: 2, phase: "model" } },
      {
        type: "hook",
        data: {
          event: "Stop",
          command: "node .gadget/tests.mjs",
          ok: true,
          outcome: "blocked",
          ms: 1830,
          output: "The tests fail:\nAssertionError: 1 !== 5",
        },
      },
      {
        type: "hook",
        data: {
          event: "PreToolUse",
          command: "node -e setInterval(() => {}, 1000)",
          ok: false,
          outcome: "timeout",
          ms: 1004,
          output: "killed after 1000 ms without finishing; the turn went on without it",
          callId: "c2",
          tool: "read_file",
        },
      },
      { type: "response", data: { message: "Left the build folder alone." } },
      { type: "done", data: { reason: "completed", passes: 2, totalCost: 0 } },
    ];
    await drone.stream(order.turnId, events);

    const turn = page.locator("article.turn", {
      has: page.locator(".prompt-bubble", { hasText: prompt }),
    });
    await turn.locator(".status-line[data-status=completed]").waitFor();
    const hooks = turn.getByRole("region", { name: "Project hooks" });
    await hooks.waitFor();
    const rows = hooks.getByRole("listitem");
    expect(await rows.count()).toBe(3);
    expect(await rows.nth(0).textContent()).toMatch(
      /PreToolUse\s*node \.gadget\/guard\.mjs\s*blocked run_command\s*42 ?ms/,
    );
    expect(await rows.nth(1).textContent()).toContain("kept the turn going");
    // A hook that failed says why without being opened.
    expect(await rows.nth(2).textContent()).toContain("timed out, killed");
    expect(await rows.nth(2).textContent()).toContain("killed after 1000 ms");
    // The blocked call's own row says who stopped it.
    await turn.getByText("blocked by a project hook").waitFor();

    await rows.nth(1).getByRole("button").click();
    await rows.nth(1).getByText("AssertionError: 1 !== 5").waitFor();
    await hooks.scrollIntoViewIfNeeded();
    await screenshot(page, "hook-events");
  }, 90_000);
});
