// The scripted model speaks the wire format the real `openai` SDK expects: JSON, SSE, errors.
import OpenAI, { type APIError } from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { type ScriptedModel, scriptedErrors, startScriptedModel } from "./scripted-model.ts";

let model: ScriptedModel | undefined;
afterEach(async () => {
  await model?.close();
  model = undefined;
});

function client(server: ScriptedModel, apiKey = "test-key") {
  return new OpenAI({ baseURL: server.baseUrl, apiKey, maxRetries: 0 });
}

describe("startScriptedModel", () => {
  it("answers a non-streaming request with the scripted message and usage", async () => {
    model = await startScriptedModel({
      replies: [{ text: "hello there", usage: { promptTokens: 11, completionTokens: 3 } }],
    });
    const answer = await client(model).chat.completions.create({
      model: "m1",
      messages: [{ role: "user", content: "hi" }],
    });
    expect(answer.choices[0]?.message.content).toBe("hello there");
    expect(answer.usage?.prompt_tokens).toBe(11);
    expect(answer.model).toBe("m1");
    expect(model.chatRequests[0]?.messages[0]?.content).toBe("hi");
  });

  it("streams text, reasoning, interleaved tool calls and a usage chunk", async () => {
    model = await startScriptedModel();
    model.enqueue({
      reasoning: "let me look at the files first",
      reasoningField: "reasoning",
      text: "Reading two files.",
      chunkSize: 3,
      interleaveToolCalls: true,
      toolCalls: [
        { id: "a", name: "read_file", arguments: { path: "README.md" } },
        { id: "b", name: "read_file", arguments: { path: "package.json" } },
      ],
      usage: { promptTokens: 100, completionTokens: 20, reasoningTokens: 7, cachedTokens: 40 },
    });
    const stream = await client(model).chat.completions.create({
      model: "m1",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = "";
    let reasoning = "";
    let textChunks = 0;
    const calls: Record<number, { id: string; name: string; arguments: string }> = {};
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      const delta = chunk.choices[0]?.delta as
        | (OpenAI.Chat.ChatCompletionChunk.Choice.Delta & { reasoning?: string })
        | undefined;
      if (!delta) continue;
      if (delta.reasoning) reasoning += delta.reasoning;
      if (delta.content) {
        text += delta.content;
        textChunks += 1;
      }
      for (const call of delta.tool_calls ?? []) {
        const entry = calls[call.index] ?? { id: "", name: "", arguments: "" };
        calls[call.index] = entry;
        entry.id += call.id ?? "";
        entry.name += call.function?.name ?? "";
        entry.arguments += call.function?.arguments ?? "";
      }
    }
    expect(reasoning).toBe("let me look at the files first");
    expect(text).toBe("Reading two files.");
    expect(textChunks).toBeGreaterThan(1);
    expect(
      Object.values(calls).map((call) => [call.id, call.name, JSON.parse(call.arguments)]),
    ).toEqual([
      ["a", "read_file", { path: "README.md" }],
      ["b", "read_file", { path: "package.json" }],
    ]);
    expect(usage).toMatchObject({
      prompt_tokens: 100,
      completion_tokens: 20,
      completion_tokens_details: { reasoning_tokens: 7 },
      prompt_tokens_details: { cached_tokens: 40 },
    });
  });

  it("sends no usage chunk when the client did not ask for one", async () => {
    model = await startScriptedModel({ replies: [{ text: "x" }] });
    const stream = await client(model).chat.completions.create({
      model: "m1",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
    });
    const usages = [];
    for await (const chunk of stream) if (chunk.usage) usages.push(chunk.usage);
    expect(usages).toEqual([]);
  });

  it("answers scripted errors with OpenAI's status, body and headers", async () => {
    model = await startScriptedModel({
      replies: [
        { error: scriptedErrors.rateLimited({ retryAfterSeconds: 2, retryAfterMs: 1500 }) },
        { error: scriptedErrors.contextLength() },
        { error: scriptedErrors.serverError() },
      ],
    });
    const request = () =>
      client(model!).chat.completions.create({
        model: "m1",
        messages: [{ role: "user", content: "hi" }],
      });
    const rateLimited = await request().catch((error: unknown) => error);
    expect(rateLimited).toBeInstanceOf(OpenAI.RateLimitError);
    expect((rateLimited as APIError).headers?.get("retry-after")).toBe("2");
    expect((rateLimited as APIError).headers?.get("retry-after-ms")).toBe("1500");
    const tooLong = (await request().catch((error: unknown) => error)) as APIError;
    expect(tooLong.status).toBe(400);
    expect(tooLong.code).toBe("context_length_exceeded");
    expect(tooLong.message).toContain("maximum context length");
    const broken = (await request().catch((error: unknown) => error)) as APIError;
    expect(broken.status).toBe(500);
  });

  it("rejects a wrong API key when one is required, and lists models", async () => {
    model = await startScriptedModel({
      apiKey: "right",
      models: ["a", "b"],
      handler: () => ({ text: "ok" }),
    });
    const wrong = await client(model, "wrong")
      .chat.completions.create({ model: "a", messages: [{ role: "user", content: "hi" }] })
      .catch((error: unknown) => error);
    expect(wrong).toBeInstanceOf(OpenAI.AuthenticationError);
    const list = await client(model, "right").models.list();
    expect(list.data.map((entry) => entry.id)).toEqual(["a", "b"]);
    expect(model.requests.map((request) => request.path)).toEqual([
      "/v1/chat/completions",
      "/v1/models",
    ]);
  });

  it("uses the queue first, then the handler that sees the last message", async () => {
    model = await startScriptedModel({
      replies: [{ text: "queued" }],
      handler: (request) => ({ text: `echo: ${request.lastText}` }),
    });
    const ask = async (content: string) =>
      (
        await client(model!).chat.completions.create({
          model: "m1",
          messages: [{ role: "user", content }],
        })
      ).choices[0]?.message.content;
    expect(await ask("one")).toBe("queued");
    expect(await ask("two")).toBe("echo: two");
    model.setHandler(undefined);
    const unscripted = (await ask("three").catch((error: unknown) => error)) as APIError;
    expect(unscripted.status).toBe(500);
    expect(unscripted.message).toContain("no scripted reply");
  });

  it("hangs until the client aborts, and cuts a stream mid-way on request", async () => {
    model = await startScriptedModel({
      replies: [
        { text: "never finished", hang: true, hangAfterChunks: 2, chunkSize: 2 },
        { text: "dropped half way", dropAfterChunks: 2, chunkSize: 2 },
      ],
    });
    const controller = new AbortController();
    const stream = await client(model).chat.completions.create(
      { model: "m1", messages: [{ role: "user", content: "hi" }], stream: true },
      { signal: controller.signal },
    );
    const received: string[] = [];
    const reading = (async () => {
      for await (const chunk of stream) {
        received.push(chunk.choices[0]?.delta.content ?? "");
        if (received.length === 2) controller.abort();
      }
    })();
    // The SDK ends an aborted stream quietly; what matters is that the hung reply let go.
    await reading.catch(() => undefined);
    expect(controller.signal.aborted).toBe(true);
    expect(received.join("")).toBe("ne");

    const dropped = await client(model).chat.completions.create({
      model: "m1",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
    });
    const consume = async () => {
      for await (const _chunk of dropped) {
        // drain
      }
    };
    await expect(consume()).rejects.toThrow();
  });

  it("waits for requests to arrive", async () => {
    model = await startScriptedModel({ handler: () => ({ text: "ok", delayMs: 5 }) });
    const waiting = model.waitForRequests(2);
    const openai = client(model);
    await Promise.all([
      openai.chat.completions.create({ model: "m1", messages: [{ role: "user", content: "1" }] }),
      openai.chat.completions.create({ model: "m1", messages: [{ role: "user", content: "2" }] }),
    ]);
    await waiting;
    expect(model.chatRequests).toHaveLength(2);
    await expect(model.waitForRequests(3, 20)).rejects.toThrow(/2 of 3/);
  });
  it("replays a recorded SSE body byte for byte, whole events or split anywhere", async () => {
    const recorded =
      ': keep-alive\n\ndata: {"choices":[{"index":0,"delta":{"content":"caf\u00e9 "}}]}\r\n\r\n' +
      'data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\n';
    model = await startScriptedModel({
      replies: [{ recorded }, { recorded, recordedChunkBytes: 3 }],
    });
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const response = await fetch(`${model.baseUrl}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "m1", stream: true, messages: [] }),
      });
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toBe("text/event-stream");
      expect(await response.text()).toBe(recorded);
    }

    model.enqueue({ recorded, recordedChunkBytes: 1 });
    const stream = await client(model).chat.completions.create({
      model: "m1",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
    });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
    expect(text).toBe("caf\u00e9 ok");
  });
});
