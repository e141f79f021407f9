// @vitest-environment node
// The web IDE in real Chromium against the real server (REST + /ide), with the server's scripted
// drone standing in for apps/drone until it lands: sign up, add a drone from the displayed command,
// add a provider and a project, edit a file by hand (and hit a conflict), then watch a turn live:
// tool activity, approvals approved and denied, a reload mid-turn, the changes diff, and Stop.
import { createHash } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { type Ack, agentEvent, type FileRequest, type FileResponse } from "@gadget/protocol";
import { ScriptedDrone, startTestServer, uniqueName } from "@gadget/server/testing";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  type Browser,
  buildApp,
  launchBrowser,
  type StaticServer,
  screenshot,
  serveStatic,
} from "./browser.ts";

type GadgetServer = Awaited<ReturnType<typeof startTestServer>>;

let server: GadgetServer;
let outDir: string;
let site: StaticServer;
let browser: Browser;
let page: Page;
let drone: ScriptedDrone | null = null;
/** Project slugs whose workspace the drone says it holds (sent with each heartbeat). */
const droneWorkspaces: string[] = [];

/** The drone's workspace: files by path. */
const workspace = new Map<string, string>([
  ["README.md", "# Calculator\n\nAdds numbers.\n"],
  ["src/add.ts", "export function add(a: number, b: number): number {\n  return a + b;\n}\n"],
]);

const sha = (text: string) => createHash("sha1").update(text).digest("hex");

function answerFileRequest(request: FileRequest): Ack<{ result: FileResponse }> {
  if (request.op === "list") {
    const prefix = request.path ? `${request.path.replace(/\/$/, "")}/` : "";
    const entries = new Map<string, { name: string; path: string; type: "file" | "directory" }>();
    for (const file of workspace.keys()) {
      if (!file.startsWith(prefix)) continue;
      const [name, ...rest] = file.slice(prefix.length).split("/");
      if (!name) continue;
      entries.set(name, {
        name,
        path: `${prefix}${name}`,
        type: rest.length > 0 ? "directory" : "file",
      });
    }
    return { ok: true, result: { entries: [...entries.values()] } };
  }
  const current = workspace.get(request.path);
  if (request.op === "read") {
    if (current === undefined)
      return { ok: false, error: { code: "not_found", message: "No such file" } };
    return { ok: true, result: { path: request.path, content: current, sha: sha(current) } };
  }
  if (request.baseSha && current !== undefined && request.baseSha !== sha(current)) {
    return {
      ok: false,
      error: { code: "conflict", message: "The file changed on the drone since you read it" },
    };
  }
  workspace.set(request.path, request.content);
  return { ok: true, result: { sha: sha(request.content) } };
}

async function waitUntil(check: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const toolRows = () => page.locator(".tool-row");

beforeAll(async () => {
  server = await startTestServer(
    { mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl") },
    uniqueName("web_e2e"),
  );
  outDir = await mkdtemp(path.join(tmpdir(), "gadget-web-live-"));
  await buildApp(outDir);
  site = await serveStatic(outDir, { apiTarget: server.url });
  browser = await launchBrowser();
  page = browser.page;
  page.setDefaultTimeout(15_000);
});

afterAll(async () => {
  drone?.close();
  await browser?.close();
  await site?.close();
  await server?.close();
  if (outDir) await rm(outDir, { recursive: true, force: true });
});

describe("web IDE against the real server", () => {
  it("signs up and lands on an empty projects page", async () => {
    await page.goto(`${site.url}/signup`);
    await page.getByLabel("Name").fill("Ada");
    await page.getByLabel("Email").fill(`ada-${Date.now()}@example.test`);
    await page.getByLabel("Password").fill("correct horse battery");
    await page.getByRole("button", { name: "Sign up" }).click();
    await page.getByText("No projects yet.").waitFor();
    expect(new URL(page.url()).pathname).toBe("/projects");
  });

  it("adds a drone from the displayed command and shows it the moment it connects", async () => {
    await page.getByRole("link", { name: "Drones" }).click();
    await page.getByText("No drones yet.").waitFor();
    await page.getByRole("button", { name: "Add a drone" }).click();
    const command = (await page.getByTestId("register-command").textContent()) ?? "";
    expect(command).toMatch(/^gadget-drone register --server \S+ --token \S+/);
    await expect(page.getByText(/expires in 1[45]:\d\d/).count()).resolves.toBe(1);
    await screenshot(page, "drones-add-command");

    // What `gadget-drone register` does with the command's token (the real CLI comes with apps/drone).
    const token = /--token\s+(\S+)/.exec(command)?.[1] ?? "";
    const registered = await fetch(`${server.url}/api/drones/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token, name: "e2e-laptop", capacity: 2 }),
    }).then(
      (response) => response.json() as Promise<{ drone: { _id: string }; credential: string }>,
    );
    drone = await ScriptedDrone.connect({
      url: server.url,
      droneId: registered.drone._id,
      credential: registered.credential,
      capacity: 2,
      workspaces: droneWorkspaces,
      onFileRequest: answerFileRequest,
    });
    const row = page.getByRole("row", { name: /e2e-laptop/ });
    await row.getByText("online").waitFor();
    expect(await page.getByTestId("register-command").count()).toBe(0);
    await screenshot(page, "drones");
  });

  it("adds a provider, and says plainly that the server cannot check it yet", async () => {
    await page.getByRole("link", { name: "Providers" }).click();
    await page.getByText("No providers yet.").waitFor();
    await page.getByLabel("Name").fill("Scripted");
    await page.getByLabel("Base URL").fill("http://127.0.0.1:9/v1");
    await page.getByLabel("Model", { exact: true }).fill("scripted-model");
    await page.getByLabel("API key").fill("sk-test-key");
    await page.getByLabel("Escalation model (optional)").fill("scripted-large");
    await page.getByLabel("Input $ / M tokens").fill("0.5");
    await page.getByLabel("Output $ / M tokens").fill("1.5");
    await page.getByRole("button", { name: "Check /models" }).click();
    await page.getByText(/cannot check providers yet|answered with/).waitFor();
    await page.getByRole("button", { name: "Add provider" }).click();
    await page.getByRole("cell", { name: "Scripted", exact: true }).waitFor();
    await screenshot(page, "providers");
  });

  it("creates a project from a git URL and opens it", async () => {
    await page.getByRole("link", { name: "Projects" }).click();
    await page.getByLabel("Name").fill("calculator");
    await page.getByLabel("Git URL").fill("https://example.test/calculator.git");
    await page.getByRole("button", { name: "Add project" }).click();
    await page.getByRole("link", { name: /calculator/ }).waitFor();
    // The drone now holds this project's workspace (a real drone clones it on its first turn).
    droneWorkspaces.push("calculator");
    await drone!.heartbeat();
    await page.getByRole("link", { name: /calculator/ }).click();
    await page.getByRole("button", { name: "README.md" }).waitFor();
    await screenshot(page, "project");
  });

  it("edits a file by hand, finds it in the drone's workspace, and shows a conflict", async () => {
    await page.getByRole("button", { name: "README.md" }).click();
    const editor = page.locator(".cm-content");
    await editor.waitFor();
    await editor.click();
    await page.keyboard.press("Control+End");
    await page.keyboard.type("Edited by hand.\n");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await page.getByText("saved", { exact: true }).waitFor();
    expect(workspace.get("README.md")).toContain("Edited by hand.");

    // The drone's copy changes behind the editor's back (the agent wrote it).
    workspace.set("README.md", "# Calculator\n\nRewritten by the agent.\n");
    await editor.click();
    await page.keyboard.type("More by hand. ");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await page.getByText(/the drone's copy of/).waitFor();
    await screenshot(page, "project-file-conflict");
    await page.getByRole("button", { name: /Load the drone's version/ }).click();
    await page.getByText("Rewritten by the agent.").waitFor();
  });

  it("runs a turn live: tools, approvals, reload mid-turn, changes, answer", async () => {
    await page.getByLabel("Session name").fill("Fix the README");
    await page.getByRole("button", { name: "New session" }).click();
    await page.getByRole("link", { name: /Fix the README/ }).click();
    await page.getByText("No turns yet.").waitFor();

    const order = drone!.nextWorkOrder();
    const box = page.getByRole("textbox", { name: "Prompt" });
    await box.fill("Add a usage section to the README");
    await box.press("Enter");
    const work = await order;
    const turnId = work.turnId;
    await page.getByText("Add a usage section to the README").waitFor();

    await drone!.stream(turnId, [
      agentEvent("status", { message: "Pass 1: reading", pass: 1, model: "scripted-model" }),
      agentEvent("thinking", { text: "The README lacks a usage section." }),
      agentEvent("tool_start", { callId: "c1", tool: "read_file", params: { path: "README.md" } }),
      agentEvent("tool_result", { callId: "c1", tool: "read_file", ok: true, summary: "3 lines" }),
      agentEvent("document_update", {
        sections: { Plan: "1. Read README\n2. Add usage\n3. Test" },
      }),
      agentEvent("cost_update", {
        totalCost: 0.0021,
        tokens: { input: 1200, output: 150, reasoning: 0, cached: 0 },
      }),
    ]);
    await page
      .getByRole("button", { name: /read_file/ })
      .getByText("3 lines")
      .waitFor();

    await drone!.stream(turnId, [
      agentEvent("status", { message: "Pass 2: testing", pass: 2, model: "scripted-large" }),
      agentEvent("tool_start", {
        callId: "c2",
        tool: "run_command",
        params: { command: "npm test" },
      }),
      agentEvent("tool_output", { callId: "c2", stream: "stdout", text: "PASS src/add.test.ts\n" }),
      agentEvent("tool_result", { callId: "c2", tool: "run_command", ok: true, summary: "exit 0" }),
      agentEvent("approval", {
        approvals: [
          {
            id: "ap-1",
            callId: "w1",
            tool: "write_file",
            params: { path: "README.md", content: "# Calculator\n\n## Usage\n" },
            description: "Write README.md",
          },
          {
            id: "ap-2",
            callId: "w2",
            tool: "run_command",
            params: { command: "git push --force" },
            description: "Run git push --force",
          },
        ],
      }),
    ]);
    const cards = page.getByRole("article", { name: /Approval for/ });
    await expect.poll(() => cards.count()).toBe(2);
    await page.getByText("1 escalation").waitFor();
    await page.locator(".status-line").last().scrollIntoViewIfNeeded();
    await page.evaluate(() => window.scrollBy(0, -80));
    await screenshot(page, "session-approvals");
    await cards.nth(0).getByRole("button", { name: "Approve" }).click();
    await cards
      .nth(0)
      .getByText(/Approved/)
      .waitFor();
    await cards.nth(1).getByRole("button", { name: "Deny" }).click();
    await cards
      .nth(1)
      .getByText(/Denied/)
      .waitFor();
    await waitUntil(() => drone!.approvalDecisions.length === 2, "both decisions at the drone");
    expect(
      drone!.approvalDecisions.map(({ approvalId, approve }) => [approvalId, approve]),
    ).toEqual([
      ["ap-1", true],
      ["ap-2", false],
    ]);

    // Reload mid-turn: everything so far comes back once, then the turn goes on live.
    await page.reload();
    await page.getByRole("button", { name: /run_command/ }).waitFor();
    expect(await toolRows().count()).toBe(2);
    await drone!.stream(turnId, [
      agentEvent("tool_start", { callId: "w1", tool: "write_file", params: { path: "README.md" } }),
      agentEvent("tool_result", {
        callId: "w1",
        tool: "write_file",
        ok: true,
        summary: "wrote 24 bytes",
      }),
      agentEvent("tool_result", {
        callId: "w2",
        tool: "run_command",
        ok: false,
        summary: "denied by the user",
      }),
      agentEvent("changes", {
        files: [{ path: "README.md", status: "modified" }],
        diff: "diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n@@ -1,3 +1,3 @@\n # Calculator\n \n-Adds numbers.\n+## Usage\n",
        truncated: false,
      }),
      agentEvent("response", {
        message: "Added a **Usage** section.\n\n```ts\nadd(1, 2); // 3\n```",
      }),
      agentEvent("done", { reason: "completed", passes: 2, totalCost: 0.0042 }),
    ]);
    await page.getByText("Completed", { exact: true }).waitFor();
    await page.getByText("Usage", { exact: true }).waitFor();
    expect(await toolRows().count()).toBe(4);
    expect(await page.getByRole("article", { name: /Approval for/ }).count()).toBe(0);
    await page.getByRole("tab", { name: /Changes/ }).click();
    await page.getByText("+## Usage").waitFor();
    await page.getByRole("tab", { name: /Changes/ }).scrollIntoViewIfNeeded();
    await page.evaluate(() => window.scrollBy(0, -160));
    await screenshot(page, "session-changes");
  });

  it("says when the connection drops, catches up when it returns, and stops a long command", async () => {
    const order = drone!.nextWorkOrder();
    const box = page.getByRole("textbox", { name: "Prompt" });
    await box.fill("Run the slow integration tests");
    await box.press("Enter");
    const { turnId } = await order;
    await drone!.stream(turnId, [
      agentEvent("status", { message: "Pass 1", pass: 1, model: "scripted-model" }),
      agentEvent("tool_start", {
        callId: "slow",
        tool: "run_command",
        params: { command: "npm run test:slow" },
      }),
      agentEvent("tool_output", {
        callId: "slow",
        stream: "stdout",
        text: "starting 300 tests…\n",
      }),
    ]);
    const live = page.locator(`[data-turn-id="${turnId}"]`);
    await live.getByText("starting 300 tests…").waitFor();
    await screenshot(page, "session-live");

    // The network drops while the turn goes on; the page says so, then catches up exactly once.
    site.setApiDown(true);
    await page.getByText(/Connection to the server lost/).waitFor();
    await drone!.stream(turnId, [
      agentEvent("tool_output", { callId: "slow", stream: "stdout", text: "test 1 passed\n" }),
      agentEvent("tool_output", { callId: "slow", stream: "stdout", text: "test 2 passed\n" }),
    ]);
    await screenshot(page, "connection-lost");
    site.setApiDown(false);
    await page.getByText(/Reconnected/).waitFor({ timeout: 20_000 });
    await live.getByText(/test 2 passed/).waitFor();
    const output = (await live.locator(".tool-output").first().textContent()) ?? "";
    expect(output.match(/test 1 passed/g)).toHaveLength(1);

    await live.getByRole("button", { name: "Stop" }).click();
    await waitUntil(() => drone!.cancels.includes(turnId), "the cancel at the drone");
    await drone!.stream(turnId, [
      agentEvent("tool_result", {
        callId: "slow",
        tool: "run_command",
        ok: false,
        summary: "killed",
      }),
      agentEvent("done", { reason: "cancelled", passes: 1, totalCost: 0.001 }),
    ]);
    await live.getByText("Stopped", { exact: true }).waitFor();
    expect(await live.getByRole("button", { name: "Stop" }).count()).toBe(0);
    await screenshot(page, "session");
  });
});
