// Images reach the model as image parts: the prompt's on the first message, a tool's after the
// tool results of its response; a model that takes no images gets neither, only the words.
import { type ScriptedModel, startScriptedModel } from "@gadget/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { baseInput, collect } from "./__fixtures__/turn.ts";
import { probeImage } from "./image-probe.ts";
import { probeProvider } from "./provider-probe.ts";
import { defineTool } from "./tool.ts";

let model: ScriptedModel;
beforeEach(async () => {
  model = await startScriptedModel();
});
afterEach(async () => {
  await model.close();
});

type Part = { type: string; text?: string; image_url?: { url: string } };
const partsOf = (content: unknown): Part[] => (Array.isArray(content) ? (content as Part[]) : []);
const imageUrls = (content: unknown) =>
  partsOf(content)
    .filter((part) => part.type === "image_url")
    .map((part) => part.image_url?.url);

/** A tool that "looks at" a picture: an image for models that take them, words for others. */
const lookTool = defineTool({
  name: "look",
  description: "Looks at the picture.",
  permission: "read",
  inputSchema: z.object({}),
  async execute(_input, context) {
    return context.acceptsImages
      ? { ok: true, output: "A picture, shown below.", summary: "picture", images: [probeImage] }
      : { ok: true, output: "A picture; this model takes no images.", summary: "picture" };
  },
});

const provider = (acceptsImages: boolean) => ({
  baseUrl: model.baseUrl,
  apiKey: "test-key",
  modelId: "model-a",
  acceptsImages,
});

describe("images in a turn", () => {
  it("sends the prompt's images as image_url parts of the first user message, every pass", async () => {
    model.enqueue({ toolCalls: [{ name: "look", arguments: {} }] }, { text: "Red." });
    const run = await collect(
      baseInput(model, {
        goal: "What is in this picture?",
        images: [probeImage],
        provider: provider(true),
        tools: [lookTool],
      }),
    );
    expect(run.outcome.reason).toBe("completed");
    for (const request of model.chatRequests) {
      const first = request.messages[1];
      expect(first?.role).toBe("user");
      expect(partsOf(first?.content)[0]).toEqual({
        type: "text",
        text: "What is in this picture?",
      });
      expect(imageUrls(first?.content)).toEqual([`data:image/png;base64,${probeImage.data}`]);
    }
    // The tool's image follows the tool result, as a user message of image parts.
    const second = model.chatRequests[1]?.messages ?? [];
    const toolIndex = second.findIndex((message) => message.role === "tool");
    expect(second[toolIndex]?.content).toBe("A picture, shown below.");
    const shown = second[toolIndex + 1];
    expect(shown?.role).toBe("user");
    expect(partsOf(shown?.content)[0]?.text).toContain("look");
    expect(imageUrls(shown?.content)).toHaveLength(1);
    // Nothing of the images is kept in the turn's messages (they are stored and checkpointed).
    expect(JSON.stringify(run.outcome.messages)).not.toContain(probeImage.data);
  });

  it("sends no image part to a model that takes none: the tool says it in words", async () => {
    model.enqueue({ toolCalls: [{ name: "look", arguments: {} }] }, { text: "No idea." });
    await collect(
      baseInput(model, {
        goal: "What is in this picture?",
        images: [probeImage],
        provider: provider(false),
        tools: [lookTool],
      }),
    );
    const sent = JSON.stringify(model.chatRequests);
    expect(sent).not.toContain("image_url");
    expect(sent).toContain("this model takes no images");
  });

  it("drops what a tool hands as an image when it is not one", async () => {
    const hostile = defineTool({
      name: "look",
      description: "Looks.",
      permission: "read",
      inputSchema: z.object({}),
      async execute() {
        return {
          ok: true,
          output: "here",
          summary: "here",
          images: [{ mediaType: "text/html", data: "PGh0bWw+" }, "nonsense"] as never,
        };
      },
    });
    model.enqueue({ toolCalls: [{ name: "look", arguments: {} }] }, { text: "Done." });
    await collect(baseInput(model, { provider: provider(true), tools: [hostile] }));
    expect(JSON.stringify(model.chatRequests)).not.toContain("image_url");
  });
});

describe("the provider check's image probe", () => {
  const toolCall = { toolCalls: [{ name: "report_weather", arguments: { city: "Paris" } }] };

  it("finds that a model takes images when it answers the image call", async () => {
    model.enqueue(toolCall, { text: "Red" });
    const { probe } = await probeProvider({ baseUrl: model.baseUrl, apiKey: "k", modelId: "m" });
    expect(probe.images).toBe(true);
    expect(imageUrls(model.chatRequests[1]?.messages[0]?.content)).toHaveLength(1);
  });

  it("finds that a model takes none when the provider refuses the image call", async () => {
    model.enqueue(toolCall, {
      error: { status: 400, message: "image_url is only supported by certain models" },
    });
    const { probe } = await probeProvider({ baseUrl: model.baseUrl, apiKey: "k", modelId: "m" });
    expect(probe.images).toBe(false);
    expect(probe.imagesMessage).toContain("only supported by certain models");
  });
});
