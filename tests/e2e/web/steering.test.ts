// @vitest-environment node
// Talking to a running turn from the session page, in real Chromium against the real server, the
// real `gadget-drone` CLI and the scripted model: Enter steers the running turn (the message shows
// in the turn where the model took it), Alt+Enter queues follow-ups (one edited, one removed while
// they wait), Rewind to here takes the last turn back (greyed, its file gone), Fork from here opens
// a new session whose first turn sees only the turns up to the fork, a limit that asks is
// extended by the amount typed into its card, and Edit and resend on the last prompt greys the
// old turn as rewound and runs the edited prompt in its place (its file gone, the new one there).
import { existsSync, readFileSync } from "node:fs";
import { readFile, rm } from "node:fs/promises";
import path from "node:path";
import { startTestServer, uniqueName } from "@gadget/server/testing";
import {
  makeTempDir,
  type ScriptedModel,
  type ScriptedRequest,
  startScriptedModel,
} from "@gadget/testkit";
import { type Browser, buildApp, launchBrowser, screenshot } from "@gadget/testkit/browser";
import { signup, waitFor } from "@gadget/testkit/wire";
import { worktreeDirectory } from "gadget-drone/testing";
import type { Locator, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import {
  createProjectSession,
  type DroneProcess,
  startRegisteredDrone,
  turnEvents,
} from "../drone/helpers.ts";
import { webDir } from "../paths.ts";

type GadgetServer = Awaited<ReturnType<typeof startTestServer>>;

let server: GadgetServer;
let model: ScriptedModel;
let browser: Browser;
let page: Page;
let user: Awaited<ReturnType<typeof signup>>;
let drone: DroneProcess;
let droneHome: string;
let workspace: string;
let projectId: string;
let projectSlug: string;
let sessionId: string;
/** The session Fork from here opened; the tests after it run there. */
let forkId: string;
let outDir: string;
/** Every request the model got, in order. */
const requests: ScriptedRequest[] = [];
/** Holds the first model call of the steered turn until the steering message is with the drone. */
let release: () => void = () => undefined;

/** What each message of a model request said. */
function said(request: ScriptedRequest): string[] {
  return request.body.messages.map((message) =>
    typeof message.content === "string" ? message.content : JSON.stringify(message.content),
  );
}

/** The user goal a request's closing state message names (the turn's prompt). */
function goalOf(request: ScriptedRequest): string {
  return /### User goal\n(.*)\n/.exec(said(request).at(-1) ?? "")?.[1] ?? "";
}

const hasToolResult = (request: ScriptedRequest) =>
  request.body.messages.some((message) => message.role === "tool");

const turnArticle = (prompt: string): Locator =>
  page.locator("article.turn", {
    has: page.locator(".prompt-bubble", { hasText: prompt }),
  });

const status = (article: Locator, value: string) =>
  article.locator(`.status-line[data-status=${value}]`).waitFor({ timeout: 45_000 });

/** A file of a session's worktree on the drone. */
const worktreeFile = (session: string, file: string) =>
  path.join(worktreeDirectory(workspace, projectSlug, session), file);

beforeAll(async () => {
  outDir = await makeTempDir("gadget-web-steering-");
  await buildApp(webDir, outDir);
  model = await startScriptedModel();
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  model.setHandler(async (request) => {
    requests.push(request);
    const goal = goalOf(request);
    if (goal === "Read the readme") {
      if (!hasToolResult(request)) {
        await gate;
        return { toolCalls: [{ name: "read_file", arguments: { path: "README.md" } }] };
      }
      return { text: "Read the readme and the licence." };
    }
    const file = {
      "Count one, edited": "one.txt",
      "Count three": "three.txt",
      "Count four": "four.txt",
      "Count five": "five.txt",
    }[goal];
    if (file && !hasToolResult(request)) {
      return {
        toolCalls: [{ name: "write_file", arguments: { path: file, content: `${goal}\n` } }],
      };
    }
    if (file) return { text: `Wrote ${file}.` };
    if (goal === "Read and answer" && !hasToolResult(request)) {
      return { toolCalls: [{ name: "read_file", arguments: { path: "README.md" } }] };
    }
    if (goal === "Read and answer") return { text: "Answered with the extra passes." };
    return { text: `Heard: ${goal}` };
  });
  server = await startTestServer(
    {
      mongoUrl: inject("mongoUrl"),
      redisUrl: inject("redisUrl"),
      webDir: outDir,
      droneGraceMs: 30_000,
      droneRequestTimeoutMs: 10_000,
    },
    uniqueName("web_steering"),
  );
  user = await signup(server.url, "steering-web");
  ({
    home: droneHome,
    workspace,
    drone,
  } = await startRegisteredDrone(user, server.url, "steering-laptop"));
  ({ projectId, projectSlug, sessionId } = await createProjectSession(user, {
    name: "Steer",
    modelUrl: model.baseUrl,
    files: { "README.md": "# Steer\n", LICENSE: "MIT\n" },
    approval: "auto",
  }));
  browser = await launchBrowser();
  page = browser.page;
  page.setDefaultTimeout(20_000);
});

afterAll(async () => {
  drone?.child.kill("SIGKILL");
  await drone?.exited;
  await browser?.close();
  await server?.context.models.User.db.dropDatabase();
  await server?.close();
  await model?.close();
  if (droneHome) await rm(droneHome, { recursive: true, force: true });
});

afterEach(async (context) => {
  if (context.task.result?.state !== "fail" || !page) return;
  await screenshot(page, `failed-steering-${context.task.name.slice(0, 30).replace(/\W+/g, "-")}`);
  console.error(`gadget-drone output:\n${drone?.output().slice(-4000)}`);
});

describe("steering, the queue, rewind, fork and a budget that asks in the browser", () => {
  it("steers the running turn with Enter and queues follow-ups, one edited and one removed while they wait", async () => {
    await page.goto(`${server.url}/`);
    await page.getByLabel("Email").fill(user.email);
    await page.getByLabel("Password").fill("correct horse battery");
    await page.getByRole("button", { name: "Log in" }).click();
    await page.getByRole("link", { name: "Projects", exact: true }).waitFor();
    await page.goto(`${server.url}/projects/${projectId}/sessions/${sessionId}`);
    await page.getByText("No turns yet.").waitFor();

    const box = page.getByRole("textbox", { name: "Prompt" });
    await box.fill("Read the readme");
    await box.press("Enter");
    await waitFor(async () => requests.length === 1, 30_000, "the first model call");
    // While the turn runs the composer says what Enter does.
    expect(await box.getAttribute("placeholder")).toContain("Steer the running turn");
    const steered = turnArticle("Read the readme");
    const turnId = (await steered.getAttribute("data-turn-id")) ?? "";

    await box.fill("Also read the licence");
    await box.press("Enter");
    await expect.poll(() => box.inputValue()).toBe("");
    // The drone has it (journaled) before the model call it waits behind ends.
    const journal = path.join(workspace, ".journal", `${turnId}.jsonl`);
    await waitFor(
      async () =>
        existsSync(journal) && readFileSync(journal, "utf8").includes("Also read the licence"),
      15_000,
      "the drone to journal the message",
    );

    for (const prompt of ["Count one", "Count two", "Count three"]) {
      await box.fill(prompt);
      await box.press("Alt+Enter");
      await turnArticle(prompt)
        .getByText(/Queued · position \d/)
        .waitFor();
    }
    const one = turnArticle("Count one");
    await one.getByRole("button", { name: "Edit" }).click();
    await one.getByLabel("Queued prompt").fill("Count one, edited");
    await one.getByRole("button", { name: "Save" }).click();
    await turnArticle("Count one, edited").getByRole("button", { name: "Edit" }).waitFor();
    await turnArticle("Count two").getByRole("button", { name: "Remove" }).click();
    await status(turnArticle("Count two"), "cancelled");

    release();
    await status(steered, "completed");
    // The message shows in the turn that took it, and the model heard it after the tool's result.
    await steered
      .getByRole("list", { name: "Your messages to this turn" })
      .getByText("Also read the licence")
      .waitFor();
    await steered.locator(".answer").getByText("Read the readme and the licence.").waitFor();
    const second = said(requests[1] as ScriptedRequest);
    expect(second.indexOf("Also read the licence")).toBeGreaterThan(0);

    await status(turnArticle("Count one, edited"), "completed");
    await status(turnArticle("Count three"), "completed");
    await turnArticle("Count three").locator(".answer").getByText("Wrote three.txt.").waitFor();
    // Run in the order posted, the withdrawn one never asked, each seeing the answers before it.
    const goals = [...new Set(requests.map(goalOf))];
    expect(goals).toEqual(["Read the readme", "Count one, edited", "Count three"]);
    const third = requests.find((request) => goalOf(request) === "Count three") as ScriptedRequest;
    expect(said(third)).toEqual(expect.arrayContaining(["Wrote one.txt."]));
    await screenshot(page, "steering-queue");
  }, 180_000);

  it("rewinds the last turn: greyed as rewound, its file gone from the worktree", async () => {
    expect(existsSync(worktreeFile(sessionId, "three.txt"))).toBe(true);
    const three = turnArticle("Count three");
    await three.getByRole("button", { name: "Rewind to here" }).click();
    await three.getByText("rewound").waitFor();
    expect(await three.getAttribute("class")).toContain("turn-rewound");
    await waitFor(
      async () => !existsSync(worktreeFile(sessionId, "three.txt")),
      15_000,
      "three.txt to leave the worktree",
    );
    expect(await readFile(worktreeFile(sessionId, "one.txt"), "utf8")).toBe("Count one, edited\n");
    // The earlier turns keep their controls; the rewound one has none.
    await expect.poll(() => three.getByRole("button", { name: "Rewind to here" }).count()).toBe(0);
    await turnArticle("Count one, edited")
      .getByRole("button", { name: "Fork from here" })
      .waitFor();
  }, 60_000);

  it("forks from an earlier turn into a new session whose turn sees the conversation up to it", async () => {
    await turnArticle("Count one, edited").getByRole("button", { name: "Fork from here" }).click();
    await page.waitForURL((url) => !url.pathname.endsWith(sessionId), { timeout: 20_000 });
    forkId = new URL(page.url()).pathname.split("/").at(-1) ?? "";
    await page.getByText("session (fork)").first().waitFor();
    await page.getByText("No turns yet.").waitFor();

    const box = page.getByRole("textbox", { name: "Prompt" });
    await box.fill("What did we count?");
    await box.press("Enter");
    const asked = turnArticle("What did we count?");
    await status(asked, "completed");
    await asked.locator(".answer").getByText("Heard: What did we count?").waitFor();
    const request = requests.find((entry) => goalOf(entry) === "What did we count?");
    const context = said(request as ScriptedRequest);
    expect(context).toEqual(expect.arrayContaining(["Count one, edited", "Wrote one.txt."]));
    expect(context.join("\n")).not.toContain("Count three");
    // Its branch starts at the forked turn's commit.
    expect(existsSync(worktreeFile(forkId, "one.txt"))).toBe(true);
    expect(existsSync(worktreeFile(forkId, "three.txt"))).toBe(false);
  }, 60_000);

  it("pauses at a limit that asks and goes on by the amount typed into the card", async () => {
    const box = page.getByRole("textbox", { name: "Prompt" });
    await page.getByText("Limits", { exact: true }).click();
    await page.getByLabel("Max passes").fill("1");
    await page.getByLabel("Ask me to extend at a limit").check();
    await box.fill("Read and answer");
    await box.press("Enter");
    const turn = turnArticle("Read and answer");
    const card = turn.getByRole("article", { name: "The turn reached its limit" });
    await card.waitFor({ timeout: 45_000 });
    await card.getByText("Used 1 of 1.").waitFor();
    const amount = card.getByLabel("Extend by");
    await amount.fill("0");
    expect(await card.getByRole("button", { name: "Extend" }).isDisabled()).toBe(true);
    await amount.fill("2");
    await card.getByRole("button", { name: "Extend" }).click();
    await status(turn, "completed");
    await turn.locator(".answer").getByText("Answered with the extra passes.").waitFor();
    await turn.getByText(/you approved/).waitFor();
    const stored = await turnEvents(user, (await turn.getAttribute("data-turn-id")) ?? "");
    expect(stored.map((event) => event.data.message)).toContain(
      "The limit maxPasses was extended by 2 to 3",
    );
  }, 90_000);

  it("edits and resends the last prompt: the old turn greyed as rewound, the edited one run in its place", async () => {
    /** Opens the last turn's Edit and resend, types `prompt` and sends it. */
    const resend = async (last: Locator, was: string, prompt: string) => {
      await last.getByRole("button", { name: "Edit and resend" }).click();
      const box = last.getByLabel("Prompt to send again");
      expect(await box.inputValue()).toBe(was);
      await box.fill(prompt);
      await last.getByRole("button", { name: "Rewind and send" }).click();
    };
    const asked = turnArticle("Read and answer");
    // Only the last turn offers it.
    expect(await turnArticle("What did we count?").getByText("Edit and resend").count()).toBe(0);
    await resend(asked, "Read and answer", "Count four");
    await asked.getByText("rewound").waitFor();
    expect(await asked.getAttribute("class")).toContain("turn-rewound");
    const four = turnArticle("Count four");
    await status(four, "completed");
    await four.locator(".answer").getByText("Wrote four.txt.").waitFor();
    await expect.poll(() => asked.getByRole("button", { name: "Rewind to here" }).count()).toBe(0);
    // The model heard the edited prompt after the turns kept, without the one it replaced.
    const heard = said(
      requests.find((request) => goalOf(request) === "Count four") as ScriptedRequest,
    );
    expect(heard).toEqual(
      expect.arrayContaining(["What did we count?", "Heard: What did we count?"]),
    );
    expect(heard.join("\n")).not.toContain("Answered with the extra passes.");
    expect(existsSync(worktreeFile(forkId, "four.txt"))).toBe(true);

    // Once more on the turn that wrote a file: its code goes too.
    await resend(four, "Count four", "Count five");
    await four.getByText("rewound").waitFor();
    const five = turnArticle("Count five");
    await status(five, "completed");
    await five.locator(".answer").getByText("Wrote five.txt.").waitFor();
    expect(existsSync(worktreeFile(forkId, "four.txt"))).toBe(false);
    expect(existsSync(worktreeFile(forkId, "five.txt"))).toBe(true);
    await five.getByRole("button", { name: "Edit and resend" }).waitFor();
    await screenshot(page, "steering-edit-and-resend");
  }, 120_000);
});
