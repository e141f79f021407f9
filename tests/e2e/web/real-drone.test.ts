// @vitest-environment node
// The web IDE in real Chromium against the real server (which serves the build itself), the real
// `gadget-drone` CLI run as a user runs it, and the scripted OpenAI-compatible model: sign up, add
// the drone from the displayed command, add and check a provider, add a project from a local git
// repository, watch turns live (tools, approvals, a reload mid-turn, a dropped connection, Stop,
// the changes diff) and edit a file by hand that lands in the drone's checkout (and a conflict).
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { startTestServer, uniqueName } from "@gadget/server/testing";
import {
  processesWithArgument,
  type ScriptedModel,
  type ScriptedReply,
  startScriptedModel,
} from "@gadget/testkit";
import {
  type Browser,
  buildApp,
  launchBrowser,
  type NetworkLink,
  screenshot,
  startNetworkLink,
} from "@gadget/testkit/browser";
import type { Locator, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { binDir, webDir } from "../paths.ts";

type GadgetServer = Awaited<ReturnType<typeof startTestServer>>;

const apiKey = "sk-web-e2e-key";
const readme = "# Calculator\n\nAdds numbers.\n";
const approvedReadme = "# Calculator\n\nAdds numbers.\n\n## Usage\n\nadd(1, 2) // 3\n";
/** The final answer of the first turn, streamed slowly so the page can be seen filling in. */
const answer = `Added a **Usage** section to README.md. ${"It shows how to call add with two numbers. ".repeat(8)}That is all.`;

let server: GadgetServer;
let model: ScriptedModel;
let link: NetworkLink;
let browser: Browser;
let page: Page;
let scratch: string;
let droneHome: string;
let droneConfig: string;
let droneWorkspace: string;
let drone: ChildProcess | null = null;
let droneOutput = "";
let gitUrl: string;
let projectSlug = "";
/** The page of the session the turns run in. */
let sessionUrl = "";

/** Runs git for the fixture repository, as a fixed author. */
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

/** What a git command prints, in `cwd`. */
function gitOutput(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, { cwd, encoding: "utf8" });
}

/** A bare repository with a couple of files on `main`, the project's remote. */
async function createRemote(root: string, files: Record<string, string>): Promise<string> {
  const bare = path.join(root, "calculator.git");
  const work = path.join(root, "calculator-work");
  git(root, "init", "--bare", "--initial-branch=main", bare);
  git(root, "clone", bare, work);
  git(work, "checkout", "-B", "main");
  for (const [file, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(work, file)), { recursive: true });
    await writeFile(path.join(work, file), content);
  }
  git(work, "add", "-A");
  git(work, "commit", "-m", "initial");
  git(work, "push", "-u", "origin", "main");
  return pathToFileURL(bare).href;
}

/** The environment of a user's shell with `gadget-drone` on the PATH and a fresh HOME. */
function droneEnvironment(): NodeJS.ProcessEnv {
  return {
    ...process.env,
    PATH: `${binDir}${path.delimiter}${process.env.PATH ?? ""}`,
    HOME: droneHome,
    XDG_CONFIG_HOME: "",
    XDG_DATA_HOME: "",
  };
}

/** Runs a command line the way a user pastes it into a shell; resolves with its output. */
function runInShell(commandLine: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("sh", ["-c", commandLine], { env: droneEnvironment() });
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr.on("data", (chunk) => {
      output += chunk;
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`\`${commandLine}\` did not finish in 60 s:\n${output}`));
    }, 60_000);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/** Stops `gadget-drone start` as Ctrl-C twice would, and kills it if it does not go. */
async function stopDrone(): Promise<void> {
  const child = drone;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  await exited;
  clearTimeout(timer);
}

/** Whether a process is still running. */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Answers a model request only once `gate` resolves: the turn is mid-way while it waits. */
function gated(gate: Promise<void>, reply: ScriptedReply): () => Promise<ScriptedReply> {
  return async () => {
    await gate;
    return reply;
  };
}

const turnArticle = (prompt: string): Locator =>
  page.locator("article.turn", { has: page.locator(".prompt-bubble", { hasText: prompt }) });

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), "gadget-web-drone-"));
  droneHome = path.join(scratch, "home");
  droneWorkspace = path.join(scratch, "workspaces");
  droneConfig = path.join(droneHome, "drone", "config.json");
  await mkdir(droneHome, { recursive: true });
  const outDir = path.join(scratch, "web");
  gitUrl = await createRemote(scratch, {
    "README.md": readme,
    "src/add.ts": "export function add(a: number, b: number): number {\n  return a + b;\n}\n",
  });
  model = await startScriptedModel({ apiKey });
  // Past the scripted replies, the model says it is done rather than failing the request.
  model.setHandler(() => ({ text: "Nothing more to do." }));
  await buildApp(webDir, outDir);
  server = await startTestServer(
    {
      mongoUrl: inject("mongoUrl"),
      redisUrl: inject("redisUrl"),
      webDir: outDir,
      // The drone heartbeats every 10 s, as shipped; file requests go through tsx on a busy machine.
      droneGraceMs: 30_000,
      droneRequestTimeoutMs: 10_000,
    },
    uniqueName("web_real_drone"),
  );
  // The browser reaches the server over a link the test can cut; the drone connects directly.
  link = await startNetworkLink(server.url);
  browser = await launchBrowser();
  page = browser.page;
  page.setDefaultTimeout(20_000);
});

afterAll(async () => {
  await stopDrone();
  await browser?.close();
  await link?.close();
  await server?.close();
  await model?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

// A failed step leaves what the page showed and what the drone said.
afterEach(async (context) => {
  if (context.task.result?.state !== "fail" || !page) return;
  await screenshot(page, `failed-${context.task.name.slice(0, 40).replace(/\W+/g, "-")}`);
  const log = await readFile(path.join(path.dirname(droneConfig), "drone.log"), "utf8").catch(
    () => "",
  );
  console.error(`gadget-drone output:\n${droneOutput}\ndrone.log (end):\n${log.slice(-4000)}`);
});

describe("web IDE with a real drone", () => {
  it("signs up in the browser and lands on Activity", async () => {
    await page.goto(`${link.url}/signup`);
    await page.getByLabel("Name").fill("Ada");
    await page.getByLabel("Email").fill(`ada-${Date.now()}@example.test`);
    await page.getByLabel("Password").fill("correct horse battery");
    await page.getByRole("button", { name: "Sign up" }).click();
    // Home is Activity: nothing has run yet, so it shows the first-run steps.
    await page.getByRole("heading", { name: "Activity" }).waitFor();
    await page.getByRole("region", { name: "Get started" }).waitFor();
    expect(new URL(page.url()).pathname).toBe("/");
  });

  it("registers and starts gadget-drone from the displayed command; the panel says registered, then online, without a reload", async () => {
    await page.getByRole("link", { name: "Drones", exact: true }).click();
    await page.getByText("No drones yet.").waitFor();
    await page.getByRole("button", { name: "Add a drone" }).click();
    const command = (await page.getByTestId("register-command").textContent()) ?? "";
    expect(command).toMatch(/^gadget-drone register --server \S+ --token \S+$/);
    expect(command).toContain(`--server ${server.url}`);

    const registered = await runInShell(
      `${command} --name e2e-laptop --workspace ${droneWorkspace} --config ${droneConfig}`,
    );
    expect(registered.output).toContain('Registered drone "e2e-laptop"');
    expect(registered.code).toBe(0);
    // The panel follows the token: registered, before the drone ever connected.
    await page.getByText("Registered as e2e-laptop.").waitFor({ timeout: 10_000 });
    expect(await page.getByTestId("start-command").textContent()).toBe("gadget-drone start");

    drone = spawn(path.join(binDir, "gadget-drone"), ["start", "--config", droneConfig], {
      env: droneEnvironment(),
    });
    drone.stdout?.on("data", (chunk) => {
      droneOutput += chunk;
    });
    drone.stderr?.on("data", (chunk) => {
      droneOutput += chunk;
    });

    const row = page.getByRole("row", { name: /e2e-laptop/ });
    await row.getByText("online", { exact: true }).waitFor({ timeout: 30_000 });
    await page.getByText("e2e-laptop is online").waitFor({ timeout: 10_000 });
    expect(await page.getByTestId("service-command").textContent()).toBe(
      "gadget-drone service install",
    );
    await screenshot(page, "drones");
  }, 90_000);

  it("adds a provider for the scripted model and checks it through the online drone", async () => {
    await page.getByRole("link", { name: "Providers", exact: true }).click();
    await page.getByText("No providers yet.").waitFor();
    await page.getByLabel("Name").fill("Scripted");
    await page.getByLabel("Base URL").fill(model.baseUrl);
    await page.getByLabel("Model", { exact: true }).fill("scripted-model");
    await page.getByLabel("API key").fill("sk-wrong");
    await page.getByRole("button", { name: "Check /models" }).click();
    await page
      .getByRole("alert")
      .getByText(/refused the API key \(HTTP 401\)/)
      .waitFor();

    await page.getByLabel("API key").fill(apiKey);
    await page.getByRole("button", { name: "Check /models" }).click();
    await page.getByText("The provider answered with 1 model:").waitFor();
    await page.getByRole("button", { name: "Add provider" }).click();
    const row = page.getByRole("row", { name: /Scripted/ });
    await row.getByRole("cell", { name: "Scripted", exact: true }).waitFor();

    // Saving checks the provider at once; that check is over before the row's own is counted.
    await page
      .getByRole("region", { name: "Check after saving" })
      .getByText("The provider answered with 1 model:")
      .waitFor();
    // A saved provider is checked with its stored key, which the page never sees again.
    const modelsAsked = model.requests.filter((request) => request.path === "/v1/models").length;
    await row.getByRole("button", { name: "Check", exact: true }).click();
    await row.getByText("The provider answered with 1 model:").waitFor();
    await row.getByText("(checked from your drone)").waitFor();
    // Then one small test call offering one tool: this model answers it in words, no tool call.
    const features = row.getByRole("list", { name: "What a test call found" });
    await features.waitFor();
    expect(await features.textContent()).toContain("Streaming: yes");
    expect(await features.textContent()).toContain("Tool calling: no");
    const asked = model.requests.filter((request) => request.path === "/v1/models");
    expect(asked.length).toBe(modelsAsked + 1);
    expect(asked.at(-1)?.headers.authorization).toBe(`Bearer ${apiKey}`);
    expect(model.requests.at(-1)?.path).toBe("/v1/chat/completions");
    await screenshot(page, "providers");
  });

  it("creates a project from a local git repository", async () => {
    await page.getByRole("link", { name: "Projects", exact: true }).click();
    await page.getByLabel("Name").fill("calculator");
    await page.getByLabel("Git URL").fill(gitUrl);
    await page.getByRole("button", { name: "Add project" }).click();
    // The online drone checked the URL with git ls-remote before the project was stored, so the
    // new project opens at once (one whose URL no drone checked stays on the list to say so).
    await page.getByRole("heading", { name: "calculator" }).waitFor();
    // The drone clones the project on its first turn; until then the page says so.
    await page
      .getByRole("navigation", { name: "Files" })
      .getByRole("status")
      .getByText(/No online drone has a checkout of this project yet/)
      .waitFor();
    await screenshot(page, "project-new");
    projectSlug = await page.evaluate(async () => {
      const token = localStorage.getItem("gadget.token");
      const response = await fetch("/api/projects", {
        headers: { authorization: `Bearer ${token}` },
      });
      const { projects } = (await response.json()) as { projects: { slug: string }[] };
      return projects[0]?.slug ?? "";
    });
    expect(projectSlug).not.toBe("");
  });

  it("runs a turn live: tools, one write approved and one denied, a reload mid-turn, the streamed answer, the diff", async () => {
    let openGate = () => {};
    const gate = new Promise<void>((resolve) => {
      openGate = resolve;
    });
    model.enqueue(
      {
        reasoning: "The README has no usage section; read it first.",
        toolCalls: [
          { name: "read_file", arguments: { path: "README.md" } },
          { name: "update_document", arguments: { sections: { plan: "1. Read the README" } } },
        ],
      },
      {
        toolCalls: [
          { name: "write_file", arguments: { path: "README.md", content: approvedReadme } },
          { name: "write_file", arguments: { path: "NOTES.md", content: "scratch notes\n" } },
        ],
      },
      gated(gate, { text: answer, chunkSize: 6, chunkDelayMs: 40 }),
    );

    await page.getByLabel("Session name").fill("Document usage");
    await page.getByLabel("Approval").selectOption("on-write");
    await page.getByRole("button", { name: "New session" }).click();
    // A new session opens once created.
    await page.getByText("No turns yet.").waitFor();
    const prompt = "Add a usage section to the README";
    const box = page.getByRole("textbox", { name: "Prompt" });
    await box.fill(prompt);
    await box.press("Enter");

    sessionUrl = page.url();
    const turn = turnArticle(prompt);
    await turn.locator(".tool-row", { hasText: "read_file" }).getByText(/Read/).waitFor();
    const cards = turn.getByRole("article", { name: /Approval for/ });
    await expect.poll(() => cards.count(), { timeout: 30_000 }).toBe(2);
    // The status comes with the turn's record (`turn_updates`, pushed at most every 250 ms after
    // the write), a moment after the approval events themselves.
    await expect
      .poll(() => turn.locator(".status-line").getAttribute("data-status"), { timeout: 10_000 })
      .toBe("awaiting_approval");
    // Tall enough for both cards (full-page shots draw the sticky composer mid-page).
    await page.setViewportSize({ width: 1280, height: 1500 });
    await turn.locator(".status-line").scrollIntoViewIfNeeded();
    await screenshot(page, "session-approvals");
    await page.setViewportSize({ width: 1280, height: 860 });

    await cards.filter({ hasText: "NOTES.md" }).getByRole("button", { name: "Deny" }).click();
    await cards.filter({ hasText: "README.md" }).getByRole("button", { name: "Approve" }).click();
    const decided = turn.locator(".decided-list li");
    await decided.filter({ hasText: "you approved" }).waitFor();
    await decided.filter({ hasText: "you denied" }).waitFor();
    await expect.poll(() => cards.count()).toBe(0);
    // The drone asks the model for its next step, which waits for the gate: the turn is mid-way.
    await model.waitForRequests(3, 30_000);
    // The turn works in its session's worktree; the default-branch checkout is left as cloned.
    const worktree = await sessionWorktree();
    expect(await readFile(path.join(worktree, "README.md"), "utf8")).toBe(approvedReadme);
    expect(existsSync(path.join(worktree, "NOTES.md"))).toBe(false);
    expect(await readFile(path.join(droneWorkspace, projectSlug, "README.md"), "utf8")).toBe(
      readme,
    );

    // Reload mid-turn: every step comes back exactly once, decisions included.
    await page.reload();
    await turn.locator(".tool-row").nth(3).waitFor();
    await expect(turn.locator(".status-line").getAttribute("data-status")).resolves.toBe(
      "processing",
    );
    expect(await page.locator(".prompt-bubble", { hasText: prompt }).count()).toBe(1);
    expect(await turn.locator(".tool-row .tool-name").allTextContents()).toEqual([
      "read_file",
      "update_document",
      "write_file",
      "write_file",
    ]);
    const callIds = await turn
      .locator(".tool-row")
      .evaluateAll((rows) => rows.map((row) => row.getAttribute("data-call-id")));
    expect(new Set(callIds).size).toBe(4);
    expect(await cards.count()).toBe(0);
    expect(await decided.allTextContents()).toEqual([
      expect.stringMatching(/README\.md.*— approved$/),
      expect.stringMatching(/NOTES\.md.*— denied$/),
    ]);
    await turn
      .locator(".tool-row", { hasText: "NOTES.md" })
      .getByText("declined by the user")
      .waitFor();

    // The turn goes on live after the reload: the answer streams in before the turn completes.
    openGate();
    const answerSeenStreaming = await page.waitForFunction(
      (promptText) => {
        const article = [...document.querySelectorAll("article.turn")].find((item) =>
          item.querySelector(".prompt-bubble")?.textContent?.includes(promptText),
        );
        const text = article?.querySelector(".answer")?.textContent ?? "";
        const status = article?.querySelector(".status-line")?.getAttribute("data-status");
        return text.startsWith("Added a Usage section") && status !== "completed" ? text : null;
      },
      prompt,
      { timeout: 30_000, polling: "raf" },
    );
    expect(await answerSeenStreaming.jsonValue()).not.toContain("That is all.");
    await turn.locator(".status-line[data-status=completed]").waitFor({ timeout: 30_000 });
    await turn
      .locator(".answer")
      .getByText(/That is all\.$/)
      .waitFor();
    expect(await turn.locator(".answer").count()).toBe(1);
    expect(await turn.locator(".tool-row").count()).toBe(4);
    await turn.getByRole("tab", { name: "Document" }).click();
    await turn.locator(".document").getByText("1. Read the README").waitFor();

    await turn.getByRole("tab", { name: /Changes/ }).click();
    const diff = turn.locator(".diff-view");
    await diff.getByText("+## Usage").waitFor();
    await expect(diff.locator(".diff-file-header").allTextContents()).resolves.toEqual([
      expect.stringContaining("README.md"),
    ]);
    await turn.getByRole("tab", { name: /Changes/ }).scrollIntoViewIfNeeded();
    await page.evaluate(() => window.scrollBy(0, -120));
    await screenshot(page, "session-changes");
  }, 150_000);

  it("keeps a long command's output exact through a dropped connection, and Stop ends it", async () => {
    // The command runs sandboxed (its own pid namespace): found from here by its last argument.
    const word = `gadget-slow-${process.pid}`;
    const script =
      "let tick = 0; setInterval(() => console.log('tick ' + ++tick), 250); setTimeout(() => {}, 60000)";
    model.enqueue({
      toolCalls: [
        {
          name: "run_command",
          arguments: { command: `node -e "${script}" ${word}`, timeout_ms: 120_000 },
        },
      ],
    });
    const prompt = "Run the slow integration tests";
    const box = page.getByRole("textbox", { name: "Prompt" });
    await box.fill(prompt);
    await box.press("Enter");
    const turn = turnArticle(prompt);
    const card = turn.getByRole("article", { name: "Approval for run_command" });
    await card.locator("pre", { hasText: "setInterval" }).waitFor({ timeout: 30_000 });
    await card.getByRole("button", { name: "Approve" }).click();

    const row = turn.locator(".tool-row", { hasText: "run_command" });
    await row.locator(".tool-output-tail").getByText("tick 3").waitFor({ timeout: 30_000 });
    await expect(turn.locator(".status-line").textContent()).resolves.not.toContain(
      "Waiting for your approval",
    );
    const [pid] = processesWithArgument(word);
    expect(pid).toBeDefined();
    expect(isRunning(pid as number)).toBe(true);
    await screenshot(page, "session-live");

    // The browser loses the server while the command goes on printing; the page catches up.
    const turnId = (await turn.getAttribute("data-turn-id")) ?? "";
    link.setDown(true);
    await page.getByText(/Connection to the server lost/).waitFor();
    await screenshot(page, "connection-lost");
    const storedTicks = async () => (await storedOutput(turnId)).match(/tick \d+/g)?.length ?? 0;
    const ticksAtCut = await storedTicks();
    await expect.poll(storedTicks, { timeout: 20_000 }).toBeGreaterThan(ticksAtCut + 4);
    link.setDown(false);
    await page.getByText(/Reconnected/).waitFor({ timeout: 30_000 });

    await row.locator(".tool-row-head").click();
    const output = row.locator(".tool-output");
    await expect
      .poll(async () => ((await output.textContent()) ?? "").match(/tick \d+/g)?.length ?? 0)
      .toBeGreaterThan(8);
    const ticks = ((await output.textContent()) ?? "").match(/tick (\d+)/g) ?? [];
    expect(ticks).toEqual(ticks.map((_, index) => `tick ${index + 1}`));

    await turn.getByRole("button", { name: "Stop", exact: true }).click();
    await turn.locator(".status-line[data-status=cancelled]").waitFor({ timeout: 30_000 });
    await turn.getByText("Stopped", { exact: true }).waitFor();
    expect(await turn.getByRole("button", { name: "Stop", exact: true }).count()).toBe(0);
    await expect.poll(() => isRunning(pid as number), { timeout: 10_000 }).toBe(false);
    await screenshot(page, "session-stopped");
  }, 150_000);

  it("edits a file by hand into the session's worktree, shows a conflict when the drone's copy moved, and delivers it", async () => {
    await page.getByRole("link", { name: "calculator", exact: true }).click();
    const tree = page.getByRole("navigation", { name: "Files" });
    await tree.getByRole("button", { name: "README.md" }).waitFor();
    await tree.getByRole("button", { name: "README.md" }).click();
    // The default branch is shown read-only; the session's work is on its own branch.
    const editor = page.locator(".cm-content");
    await editor.getByText("Adds numbers.").waitFor();
    await page.getByText("read-only", { exact: true }).waitFor();
    expect(await page.getByRole("button", { name: "Save", exact: true }).count()).toBe(0);
    await screenshot(page, "project");

    await page.getByLabel("Files of").selectOption({ label: "session Document usage" });
    await tree.getByRole("button", { name: "README.md" }).click();
    await editor.getByText("## Usage").waitFor();
    await tree.getByRole("button", { name: "src" }).click();
    await tree.getByRole("button", { name: "add.ts" }).click();
    await editor.getByText("return a + b;").waitFor();
    await editor.click();
    await page.keyboard.press("Control+End");
    await page.keyboard.type("// Edited by hand.\n");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await page.getByText("saved", { exact: true }).waitFor();
    const worktree = await sessionWorktree();
    const onDisk = path.join(worktree, "src", "add.ts");
    expect(await readFile(onDisk, "utf8")).toContain("// Edited by hand.\n");
    // The default branch's checkout never takes a hand edit.
    expect(await readFile(path.join(droneWorkspace, projectSlug, "src", "add.ts"), "utf8")).toBe(
      "export function add(a: number, b: number): number {\n  return a + b;\n}\n",
    );

    // The worktree changes behind the editor's back; saving over it is refused, not lost.
    const theirs = "export const add = (a: number, b: number) => a + b;\n";
    await writeFile(onDisk, theirs);
    await editor.click();
    await page.keyboard.type("// More by hand.");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await page.getByText(/the drone's copy of/).waitFor();
    expect(await readFile(onDisk, "utf8")).toBe(theirs);
    await screenshot(page, "project-file-conflict");
    await page.getByRole("button", { name: /Load the drone's version/ }).click();
    await editor.getByText("export const add").waitFor();

    // The session shows its branch with the hand edit uncommitted; Deliver now commits and pushes.
    await page.goto(sessionUrl);
    const branch = page.getByRole("status", { name: "Branch" });
    await branch.getByText(/\d+ ahead · 0 behind main · uncommitted changes/).waitFor();
    const branchName = (await branch.locator("code").textContent()) ?? "";
    expect(branchName).toMatch(/^gadget\/document-usage-[0-9a-f]{6}$/);
    await page.getByRole("button", { name: "Deliver now" }).click();
    await page.getByText(`Pushed ${branchName}`, { exact: false }).waitFor({ timeout: 30_000 });
    await branch.getByText(/\d+ ahead · 0 behind main$/).waitFor();
    await screenshot(page, "session-delivered");
    const remote = fileURLToPath(gitUrl);
    expect(gitOutput(remote, "show", `${branchName}:src/add.ts`)).toBe(theirs);
    expect(gitOutput(remote, "log", "-1", "--format=%s", branchName).trim()).toBe(
      "Hand edits in Document usage",
    );
  }, 90_000);

  it("reverts a finished turn from its panel after asking, and shows it Reverted after a reload", async () => {
    await page.goto(sessionUrl);
    const prompt = "Add a usage section to the README";
    const turn = turnArticle(prompt);
    await turn.getByRole("button", { name: "Revert this turn" }).click();
    const question = turn.getByRole("group", { name: "Revert this turn" });
    await question.getByText(/Undo this turn's changes to 1 file\?/).waitFor();
    await question.getByRole("button", { name: "Revert", exact: true }).click();
    await turn.getByText(/README\.md back as before this turn/).waitFor({ timeout: 30_000 });
    // The session's branch has the README as cloned again; the hand-edited checkout is untouched.
    expect(await readFile(path.join(await sessionWorktree(), "README.md"), "utf8")).toBe(readme);
    await screenshot(page, "session-reverted");

    await page.reload();
    await turnArticle(prompt).getByText("Reverted", { exact: true }).waitFor();
    expect(
      await turnArticle(prompt).getByRole("button", { name: "Revert this turn" }).count(),
    ).toBe(0);
  }, 60_000);
});

/** The one session's worktree on the drone (the test makes one session). */
async function sessionWorktree(): Promise<string> {
  const parent = path.join(droneWorkspace, ".worktrees", projectSlug);
  const sessions = (await readdir(parent, { withFileTypes: true })).filter((entry) =>
    entry.isDirectory(),
  );
  expect(sessions).toHaveLength(1);
  return path.join(parent, (sessions[0] as { name: string }).name);
}

/** A turn's tool output as the server stored it, read over REST (not through the browser's link). */
async function storedOutput(turnId: string): Promise<string> {
  const token = await page.evaluate(() => localStorage.getItem("gadget.token"));
  const response = await fetch(`${server.url}/api/turns/${turnId}/events?after=0&limit=1000`, {
    headers: { authorization: `Bearer ${token}` },
  });
  const { events } = (await response.json()) as {
    events: { type: string; data: { text?: string } }[];
  };
  return events
    .filter((event) => event.type === "tool_output")
    .map((event) => event.data.text ?? "")
    .join("");
}
