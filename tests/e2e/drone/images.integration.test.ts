// Images in prompts end to end (decision 0051): the real server, Redis and FerretDB, the
// gadget-drone process and the scripted model. A check learns which model takes images; an image
// prompt reaches the vision model as an image part (and read_file of a PNG too), is stored with
// the turn and served back; a text-only model is refused before the turn starts; hostile images
// get precise answers and store nothing.
import type { GadgetServer } from "@gadget/server";
import { startTestServer } from "@gadget/server/testing";
import { type ChatRequestBody, type ScriptedModel, startScriptedModel } from "@gadget/testkit";
import { type ApiClient, signup } from "@gadget/testkit/wire";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  createProjectSession,
  type DroneProcess,
  startRegisteredDrone,
  waitForTurn,
} from "./helpers.ts";

/** A 16×16 red PNG. */
const png = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAIAAACQkWg2AAAAFklEQVR42mP4z8BAEmIY1TCqYfhqAACQ+f8B8u7oVwAAAABJRU5ErkJggg==",
  "base64",
);
const jpegHeader = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46]);
const refusal = "Invalid content type. image_url is only supported by certain models.";

type Part = { type: string; text?: string; image_url?: { url: string } };
const partsOf = (content: unknown): Part[] => (Array.isArray(content) ? (content as Part[]) : []);
const imageUrls = (content: unknown) =>
  partsOf(content)
    .filter((part) => part.type === "image_url")
    .map((part) => part.image_url?.url);
const hasImage = (body: ChatRequestBody) =>
  body.messages.some((message) => imageUrls(message.content).length > 0);

describe("images in prompts end to end", () => {
  let server: GadgetServer;
  let model: ScriptedModel;
  let user: ApiClient;
  let drone: DroneProcess;
  let sessionId: string;
  let vision: string;
  let textOnly: string;

  const provider = async (name: string, modelId: string) =>
    (await user.post("/api/providers", { name, baseUrl: model.baseUrl, apiKey: "k", modelId })).body
      .provider._id as string;
  const turnCount = async () =>
    ((await user.get(`/api/sessions/${sessionId}/turns`)).body.turns as unknown[]).length;
  const post = (body: Record<string, unknown>) =>
    user.post(`/api/sessions/${sessionId}/turns`, { prompt: "What is this?", ...body });
  const asImage = (bytes: Buffer, mediaType = "image/png", name?: string) => ({
    mediaType,
    data: bytes.toString("base64"),
    ...(name ? { name } : {}),
  });

  beforeAll(async () => {
    server = await startTestServer(
      { mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl"), droneGraceMs: 30_000 },
      `drone_images_${process.pid}`,
    );
    // Queued replies first (a turn's script); otherwise the check's probe calls are answered:
    // the text-only model refuses any image part as OpenAI's text models do.
    model = await startScriptedModel({
      models: ["vision-model", "text-model"],
      handler: ({ body }) => {
        if (body.model === "text-model" && hasImage(body))
          return { error: { status: 400, message: refusal, type: "invalid_request_error" } };
        if (body.tools?.some((tool) => tool.function.name === "report_weather"))
          return { toolCalls: [{ name: "report_weather", arguments: { city: "Paris" } }] };
        return { text: "Red" };
      },
    });
    user = await signup(server.url, "images-e2e");
    ({ sessionId } = await createProjectSession(user, {
      name: "Images",
      modelUrl: model.baseUrl,
      files: { "README.md": "# Images\n", "logo.png": png },
    }));
    vision = await provider("vision", "vision-model");
    textOnly = await provider("text only", "text-model");
    ({ drone } = await startRegisteredDrone(user, server.url, "images-drone"));
  }, 120_000);

  afterAll(async () => {
    drone?.child.kill("SIGKILL");
    await model?.close();
    await server?.close();
  });

  it("a check on the drone learns which model takes images", async () => {
    const seen = await user.post(`/api/providers/${vision}/check`, {});
    expect(seen.body).toMatchObject({ ok: true, via: "drone", probe: { images: true } });
    const blind = await user.post(`/api/providers/${textOnly}/check`, {});
    expect(blind.body.probe).toMatchObject({
      images: false,
      imagesMessage: expect.stringContaining("only supported by certain models"),
    });
    const listed = (await user.get("/api/providers")).body.providers as Array<{
      _id: string;
      images: { accepted: boolean } | null;
    }>;
    expect(listed.find((entry) => entry._id === vision)?.images?.accepted).toBe(true);
    expect(listed.find((entry) => entry._id === textOnly)?.images?.accepted).toBe(false);
  });

  it("an image prompt reaches the vision model as an image part, and read_file of a PNG too", async () => {
    const before = model.chatRequests.length;
    model.enqueue(
      { toolCalls: [{ name: "read_file", arguments: { path: "logo.png" } }] },
      { text: "A red square, twice." },
    );
    const created = await post({
      providerId: vision,
      images: [
        {
          ...asImage(png, "image/png", "red.png"),
          data: `data:image/png;base64,${png.toString("base64")}`,
        },
      ],
    });
    expect(created.status).toBe(202);
    const turn = await waitForTurn(user, created.body.turn._id, ["completed", "failed"], 60_000);
    expect(turn.status).toBe("completed");
    expect(turn.response).toBe("A red square, twice.");

    const [first, second] = model.chatRequests.slice(before);
    const prompt = first?.messages.find((message) => message.role === "user");
    expect(partsOf(prompt?.content)[0]).toMatchObject({ type: "text", text: "What is this?" });
    expect(imageUrls(prompt?.content)).toEqual([`data:image/png;base64,${png.toString("base64")}`]);
    // The file read: its tool result in words, then the picture as a user message's image part.
    const messages = second?.messages ?? [];
    const result = messages.findIndex((message) => message.role === "tool");
    expect(messages[result]?.content).toContain("logo.png is a PNG image");
    expect(imageUrls(messages[result + 1]?.content)).toEqual([
      `data:image/png;base64,${png.toString("base64")}`,
    ]);

    // Stored with the turn: listed without bytes, served back with its type to its owner only.
    expect(turn.images).toEqual([
      { _id: expect.any(String), mediaType: "image/png", name: "red.png", size: png.length },
    ]);
    const url = `${server.url}/api/turns/${turn._id}/images/${turn.images[0]._id}`;
    const served = await fetch(url, { headers: { authorization: `Bearer ${user.token}` } });
    expect(served.status).toBe(200);
    expect(served.headers.get("content-type")).toBe("image/png");
    expect(Buffer.from(await served.arrayBuffer()).equals(png)).toBe(true);
    const stranger = await signup(server.url, "images-stranger");
    const hidden = await fetch(url, { headers: { authorization: `Bearer ${stranger.token}` } });
    expect(hidden.status).toBe(404);
  });

  it("a text-only or unchecked model is refused before the turn starts", async () => {
    const before = await turnCount();
    const blind = await post({ providerId: textOnly, images: [asImage(png)] });
    expect(blind.status).toBe(422);
    expect(blind.body.error.code).toBe("images_not_supported");
    expect(blind.body.error.message).toContain("text-model");
    expect(blind.body.error.message).toContain("does not take images");

    const unchecked = await provider("never checked", "vision-model");
    const unknown = await post({ providerId: unchecked, images: [asImage(png)] });
    expect(unknown.status).toBe(422);
    expect(unknown.body.error.message).toContain("has not been checked for images");
    expect(await turnCount()).toBe(before);
  });

  it("hostile images get precise answers and store nothing", async () => {
    const before = await turnCount();
    const oversize = Buffer.concat([png, Buffer.alloc(2 * 1024 * 1024)]);
    const answers = {
      tooLarge: await post({ providerId: vision, images: [asImage(oversize)] }),
      fakeType: await post({ providerId: vision, images: [asImage(jpegHeader)] }),
      textAsPng: await post({
        providerId: vision,
        images: [asImage(Buffer.from("<svg onload=alert(1)>"))],
      }),
      svg: await post({
        providerId: vision,
        images: [asImage(Buffer.from("<svg/>"), "image/svg+xml")],
      }),
      tooMany: await post({
        providerId: vision,
        images: Array.from({ length: 5 }, () => asImage(png)),
      }),
      notBase64: await post({
        providerId: vision,
        images: [{ mediaType: "image/png", data: "%%%" }],
      }),
      hugeBody: await post({
        providerId: vision,
        images: [{ mediaType: "image/png", data: "A".repeat(13 * 1024 * 1024) }],
      }),
    };
    const seen = Object.fromEntries(
      Object.entries(answers).map(([name, answer]) => [
        name,
        [answer.status, answer.body.error?.code],
      ]),
    );
    expect(seen).toEqual({
      tooLarge: [413, "image_too_large"],
      fakeType: [415, "image_type_not_supported"],
      textAsPng: [415, "image_type_not_supported"],
      svg: [415, "image_type_not_supported"],
      tooMany: [400, "too_many_images"],
      notBase64: [400, "validation_failed"],
      hugeBody: [413, "payload_too_large"],
    });
    expect(answers.fakeType.body.error.message).toContain(
      "says image/png but its bytes are image/jpeg",
    );
    expect(answers.tooLarge.body.error.message).toContain("at most 2.0 MiB");
    expect(await turnCount()).toBe(before);
  });
});
