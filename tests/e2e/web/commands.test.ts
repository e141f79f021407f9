// @vitest-environment node
// The composer's `/` commands in real Chromium against the real server: typing `/` lists the
// project's commands the drone holding it answers with (files and MCP prompts, with their
// descriptions), arrow keys and Enter take one, and the turn shows what its command became.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { agentEvent, type ProjectCommandsRequest } from "@gadget/protocol";
import { startTestServer, uniqueName } from "@gadget/server/testing";
import { type Browser, buildApp, launchBrowser, screenshot } from "@gadget/testkit/browser";
import { registerDrone, ScriptedDrone, setupWorkspace, signup } from "@gadget/testkit/wire";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { webDir } from "../paths.ts";

type GadgetServer = Awaited<ReturnType<typeof startTestServer>>;

let scratch: string;
let server: GadgetServer;
let drone: ScriptedDrone | undefined;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), "gadget-web-commands-"));
  const outDir = path.join(scratch, "web");
  await buildApp(webDir, outDir);
  server = await startTestServer(
    { mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl"), webDir: outDir },
    uniqueName("web_commands"),
  );
  browser = await launchBrowser({ viewport: { width: 1280, height: 900 } });
  page = browser.page;
}, 180_000);

afterAll(async () => {
  drone?.close();
  await browser?.close();
  await server?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe("commands in the composer", () => {
  it("autocompletes / with the project's commands and shows what a turn's command became", async () => {
    const user = await signup(server.url, "slash");
    const workspace = await setupWorkspace(user, { projectName: "slashes" });
    const registered = await registerDrone(user, { name: "holder" });
    const asked: ProjectCommandsRequest[] = [];
    drone = await ScriptedDrone.connect({
      url: server.url,
      droneId: registered.droneId,
      credential: registered.credential,
      workspaces: [workspace.projectSlug],
      onProjectCommands: (request) => {
        asked.push(request);
        return {
          ok: true,
          result: {
            commands: [
              {
                name: "review",
                description: "Review a file the team's way",
                source: "file",
                argumentHint: "<file>",
              },
              { name: "release", description: "Cut a release", source: "file" },
              {
                name: "mcp__tracker__summarize",
                description: "Summarise the tracker's issues",
                source: "mcp",
                server: "tracker",
                argumentHint: "<topic> [style]",
              },
            ],
          },
        };
      },
    });

    await page.goto(`${server.url}/login`);
    await page.getByLabel("Email").fill(user.email);
    await page.getByLabel("Password").fill("correct horse battery");
    await page.getByRole("button", { name: "Log in" }).click();
    await page.waitForURL(`${server.url}/`);
    await page.goto(
      `${server.url}/projects/${workspace.projectId}/sessions/${workspace.sessionId}`,
    );

    const prompt = page.getByRole("textbox", { name: "Prompt" });
    await prompt.click();
    await prompt.pressSequentially("/");
    const list = page.getByRole("listbox", { name: "Commands" });
    await list.waitFor();
    expect(await list.getByRole("option").allTextContents()).toEqual([
      "/review <file>Review a file the team's way",
      "/releaseCut a release",
      "/mcp__tracker__summarize <topic> [style]Summarise the tracker's issues · MCP tracker",
    ]);
    // The drone was asked for this session's branch.
    expect(asked.at(-1)).toEqual({
      projectSlug: workspace.projectSlug,
      sessionId: workspace.sessionId,
    });
    await screenshot(page, "composer-commands");

    // Narrowed by what is typed; the arrow moves, Enter takes it (and sends nothing).
    await prompt.pressSequentially("re");
    expect(await list.getByRole("option").count()).toBe(2);
    await prompt.press("ArrowDown");
    await list.getByRole("option", { name: /release/, selected: true }).waitFor();
    await prompt.press("Enter");
    expect(await prompt.inputValue()).toBe("/release ");
    await list.waitFor({ state: "detached" });
    expect(drone.workOrders).toHaveLength(0);

    // Escape closes the list; a name nobody has lists nothing.
    await prompt.fill("");
    await prompt.pressSequentially("/mcp");
    await list.getByRole("option").first().waitFor();
    await prompt.press("Escape");
    await list.waitFor({ state: "detached" });
    await prompt.fill("");
    await prompt.pressSequentially("/nothing-like-it");
    expect(await list.count()).toBe(0);

    // A click takes one too; then the prompt goes out as typed and the turn shows its expansion.
    await prompt.fill("");
    await prompt.pressSequentially("/");
    await list.getByRole("option", { name: /review/ }).click();
    await prompt.pressSequentially("src/app.ts");
    await prompt.press("Enter");
    const order = await drone.nextWorkOrder(20_000);
    expect(order.prompt).toBe("/review src/app.ts");
    await drone.stream(order.turnId, [
      agentEvent("command", {
        name: "review",
        source: "file",
        origin: ".gadget/commands/review.md",
        arguments: "src/app.ts",
        prompt: "Review src/app.ts carefully and list every bug you find.",
      }),
      agentEvent("response", { message: "Reviewed." }),
      agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }),
    ]);
    const expansion = page.locator(".command-expansion summary");
    await expansion.waitFor({ timeout: 15_000 });
    expect(await expansion.textContent()).toBe("/review expanded from .gadget/commands/review.md");
    await expansion.click();
    await page.getByText("Review src/app.ts carefully and list every bug you find.").waitFor();
    await screenshot(page, "turn-command-expansion");
  }, 120_000);
});
