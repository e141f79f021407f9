// @vitest-environment node
// An image pasted into the composer, in real Chromium against the real server (decision 0051): a
// thumbnail shows at once, a file that is no image of ours is refused in words, Send carries the
// image with the prompt, and the turn shows it under its prompt, read back from the server.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { startTestServer, uniqueName } from "@gadget/server/testing";
import { type ScriptedModel, startScriptedModel } from "@gadget/testkit";
import { type Browser, buildApp, launchBrowser, screenshot } from "@gadget/testkit/browser";
import { setupWorkspace, signup } from "@gadget/testkit/wire";
import type { Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { webDir } from "../paths.ts";

type GadgetServer = Awaited<ReturnType<typeof startTestServer>>;

/** A 16×16 red PNG. */
const png =
  "iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAIAAACQkWg2AAAAFklEQVR42mP4z8BAEmIY1TCqYfhqAACQ+f8B8u7oVwAAAABJRU5ErkJggg==";

let scratch: string;
let server: GadgetServer;
let model: ScriptedModel;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), "gadget-web-images-"));
  // The check's calls: the tool call it offers, then an answer to the image (a vision model).
  model = await startScriptedModel({
    models: ["vision-model"],
    handler: ({ hasTools }) =>
      hasTools
        ? { toolCalls: [{ name: "report_weather", arguments: { city: "Paris" } }] }
        : { text: "Red" },
  });
  const outDir = path.join(scratch, "web");
  await buildApp(webDir, outDir);
  server = await startTestServer(
    {
      mongoUrl: inject("mongoUrl"),
      redisUrl: inject("redisUrl"),
      webDir: outDir,
      allowPrivateNetwork: true,
    },
    uniqueName("web_images"),
  );
  browser = await launchBrowser({ viewport: { width: 1280, height: 900 } });
  page = browser.page;
  page.setDefaultTimeout(20_000);
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await model?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

afterEach(async (context) => {
  if (context.task.result?.state !== "fail" || !page) return;
  await screenshot(page, `failed-${context.task.name.slice(0, 40).replace(/\W+/g, "-")}`);
});

/** Pastes files into the prompt box as a browser's clipboard would hand them. */
async function paste(files: Array<{ name: string; type: string; base64: string }>) {
  await page.evaluate((given) => {
    const data = new DataTransfer();
    for (const file of given) {
      const bytes = Uint8Array.from(atob(file.base64), (character) => character.charCodeAt(0));
      data.items.add(new File([bytes], file.name, { type: file.type }));
    }
    const target = document.querySelector("#prompt");
    target?.dispatchEvent(
      new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }),
    );
  }, files);
}

/** Whether the image has been decoded (the CSP let it load, and it is a picture). */
const decodedWidth = (image: ReturnType<Page["getByRole"]>) =>
  image.evaluate((element) => (element as HTMLImageElement).naturalWidth);

describe("images in the composer", () => {
  it("an image pasted into the composer shows a thumbnail and is sent with the prompt", async () => {
    const user = await signup(server.url, "painter");
    const workspace = await setupWorkspace(user, { projectName: "Pictures" });
    const vision = await user.post("/api/providers", {
      name: "vision",
      baseUrl: model.baseUrl,
      apiKey: "k",
      modelId: "vision-model",
    });
    const providerId = vision.body.provider._id as string;
    const check = await user.post(`/api/providers/${providerId}/check`, {});
    expect(check.body.probe).toMatchObject({ images: true });

    await page.goto(`${server.url}/login`);
    await page.getByLabel("Email").fill(user.email);
    await page.getByLabel("Password").fill("correct horse battery");
    await page.getByRole("button", { name: "Log in" }).click();
    await page.waitForURL(`${server.url}/`);
    await page.goto(
      `${server.url}/projects/${workspace.projectId}/sessions/${workspace.sessionId}`,
    );
    const composer = page.getByRole("form", { name: "Send a prompt" });
    await composer.getByLabel("Provider").selectOption(providerId);
    await composer.getByLabel("Prompt").fill("What colour is this?");

    // Not an image of ours: refused in words, nothing attached.
    await paste([{ name: "logo.svg", type: "image/svg+xml", base64: btoa("<svg/>") }]);
    await composer
      .getByRole("alert")
      .filter({ hasText: "images must be PNG, JPEG, GIF or WebP" })
      .waitFor();
    expect(await composer.getByRole("list", { name: "Attached images" }).count()).toBe(0);

    await paste([{ name: "red.png", type: "image/png", base64: png }]);
    const thumbnail = composer
      .getByRole("list", { name: "Attached images" })
      .getByRole("img", { name: "red.png" });
    await thumbnail.waitFor();
    await expect.poll(() => decodedWidth(thumbnail)).toBe(16);
    await screenshot(page, "composer-image-pasted");

    await composer.getByRole("button", { name: "Send" }).click();
    // Sent: the composer is empty again, and the turn shows the image under its prompt.
    await composer.getByRole("list", { name: "Attached images" }).waitFor({ state: "detached" });
    const shown = page
      .getByRole("list", { name: "Images sent with the prompt" })
      .getByRole("img", { name: "red.png" });
    await shown.waitFor();
    await expect.poll(() => decodedWidth(shown)).toBe(16);
    await screenshot(page, "turn-with-image");

    const turns = (await user.get(`/api/sessions/${workspace.sessionId}/turns`)).body.turns;
    expect(turns).toHaveLength(1);
    expect(turns[0]).toMatchObject({
      prompt: "What colour is this?",
      provider: providerId,
      images: [{ mediaType: "image/png", name: "red.png", size: 79 }],
    });
  }, 120_000);
});
