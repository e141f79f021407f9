// A provider refusing a request for a documented reason (each answer recorded from a real
// provider): the turn adapts the request, says so, and completes; quirks it is given are applied
// from the first call.
import type { ProviderQuirkCode } from "@gadget/protocol";
import { type ScriptedModel, scriptedErrors, startScriptedModel } from "@gadget/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { recordedRejection } from "./__fixtures__/rejections.ts";
import { baseInput, collect } from "./__fixtures__/turn.ts";

let model: ScriptedModel;
beforeEach(async () => {
  model = await startScriptedModel();
});
afterEach(async () => {
  await model.close();
});

const sampling = { temperature: 0.7, topP: 0.9, maxTokens: 2_000 };

function input(quirks: ProviderQuirkCode[] = []) {
  return baseInput(model, {
    provider: {
      baseUrl: model.baseUrl,
      apiKey: "test-key",
      modelId: "model-a",
      params: sampling,
      quirks,
    },
  });
}

describe("a refused field is left out or renamed, and the call is sent again", () => {
  const cases: Array<{
    file: string;
    quirk: ProviderQuirkCode;
    check: (first: Record<string, unknown>, second: Record<string, unknown>) => void;
  }> = [
    {
      file: "openai-temperature-value.json",
      quirk: "no_temperature",
      check: (first, second) => {
        expect(first.temperature).toBe(0.7);
        expect(second).not.toHaveProperty("temperature");
        expect(second.top_p).toBe(0.9);
      },
    },
    {
      file: "openai-temperature-parameter.json",
      quirk: "no_temperature",
      check: (_first, second) => expect(second).not.toHaveProperty("temperature"),
    },
    {
      file: "openai-top-p.json",
      quirk: "no_top_p",
      check: (first, second) => {
        expect(first.top_p).toBe(0.9);
        expect(second).not.toHaveProperty("top_p");
        expect(second.temperature).toBe(0.7);
      },
    },
    {
      file: "openai-max-tokens.json",
      quirk: "max_completion_tokens",
      check: (first, second) => {
        expect(first.max_tokens).toBe(2_000);
        expect(second).not.toHaveProperty("max_tokens");
        expect(second.max_completion_tokens).toBe(2_000);
      },
    },
    {
      file: "fireworks-stream-options.json",
      quirk: "no_stream_options",
      check: (first, second) => {
        expect(first.stream_options).toEqual({ include_usage: true });
        expect(second).not.toHaveProperty("stream_options");
        expect(second.stream).toBe(true);
      },
    },
  ];

  for (const { file, quirk, check } of cases) {
    it(`${file}: ${quirk}`, async () => {
      const rejection = recordedRejection(file);
      model.enqueue({ error: rejection }, { text: "adapted and answered" });
      const run = await collect(input());
      expect(run.outcome).toMatchObject({ reason: "completed", response: "adapted and answered" });
      const adapted = run.of("provider_adapted");
      expect(adapted).toHaveLength(1);
      expect(adapted[0]?.quirk).toBe(quirk);
      // The provider's own words, not the SDK's "400 status code (no body)".
      const body = rejection.body as { error: { message: string } };
      expect(adapted[0]?.message).toBe(body.error.message);
      expect(model.chatRequests).toHaveLength(2);
      check(
        model.chatRequests[0] as unknown as Record<string, unknown>,
        model.chatRequests[1] as unknown as Record<string, unknown>,
      );
      // No retry was spent: the adapted call went at once.
      expect(run.of("status").filter((status) => status.phase === "retry")).toEqual([]);
    });
  }

  it("a provider without stream_options reports no usage: the turn estimates it", async () => {
    model.enqueue(
      { error: recordedRejection("fireworks-stream-options.json") },
      { text: "no usage here", usage: null },
    );
    const run = await collect(input());
    expect(run.outcome.reason).toBe("completed");
    expect(run.outcome.usage.output).toBeGreaterThan(0);
  });
});

describe("tool-call ids for Mistral (short_tool_call_ids)", () => {
  it("rewrites the ids of history and of new calls alike, in calls and tool results", async () => {
    model.enqueue(
      {
        toolCalls: [
          { id: "call_abcdefghijklmnop", name: "read_file", arguments: { path: "a.txt" } },
          { id: "call-2-2", name: "read_file", arguments: { path: "b.txt" } },
        ],
      },
      { error: recordedRejection("mistral-tool-call-id.json") },
      { toolCalls: [{ id: "Ab3dE6gH9", name: "read_file", arguments: { path: "c.txt" } }] },
      { text: "read three files" },
    );
    const run = await collect(input());
    expect(run.outcome).toMatchObject({ reason: "completed", response: "read three files" });
    expect(run.of("provider_adapted")).toEqual([
      {
        quirk: "short_tool_call_ids",
        message: "Tool call id was 2968-LWy3uasib but must be a-z, A-Z, 0-9, with a length of 9.",
      },
    ]);
    expect(model.chatRequests).toHaveLength(4);
    // The refused request still had the provider's ids; every later one has only short ones.
    const refused = model.chatRequests[1]!;
    expect(
      refused.messages.flatMap((message) => message.tool_calls ?? []).map((call) => call.id),
    ).toEqual(["call_abcdefghijklmnop", "call-2-2"]);
    for (const request of model.chatRequests.slice(2)) {
      const calls = request.messages.flatMap((message) => message.tool_calls ?? []);
      const results = request.messages.filter((message) => message.role === "tool");
      expect(calls.length).toBeGreaterThan(0);
      for (const call of calls) expect(call.id).toMatch(/^[A-Za-z0-9]{9}$/);
      expect(results.map((result) => result.tool_call_id)).toEqual(calls.map((call) => call.id));
      expect(new Set(calls.map((call) => call.id)).size).toBe(calls.length);
    }
    // The same history maps the same way on every call (the prompt cache keeps its prefix).
    const idsOf = (index: number) =>
      model.chatRequests[index]!.messages.flatMap((message) => message.tool_calls ?? []).map(
        (call) => call.id,
      );
    expect(idsOf(3).slice(0, 2)).toEqual(idsOf(2));
    // A valid id the provider made itself is sent as it was.
    expect(idsOf(3)[2]).toBe("Ab3dE6gH9");
    // The turn's own record keeps the original ids.
    const stored = run.outcome.messages.flatMap((message) => message.toolCalls ?? []);
    expect(stored.map((call) => call.id)).toEqual([
      "call_abcdefghijklmnop",
      "call-2-2",
      "Ab3dE6gH9",
    ]);
  });
});

describe("reasoning sent back (echo_reasoning) or not (no_reasoning_echo)", () => {
  it("DeepSeek's missing reasoning_content: the reasoning goes back on assistant messages", async () => {
    model.enqueue(
      {
        reasoning: "I should read the file first.",
        toolCalls: [{ name: "read_file", arguments: { path: "a.txt" } }],
      },
      { error: recordedRejection("deepseek-missing-reasoning-content.json") },
      { text: "done reading" },
    );
    const run = await collect(input());
    expect(run.outcome).toMatchObject({ reason: "completed", response: "done reading" });
    expect(run.of("provider_adapted").map((event) => event.quirk)).toEqual(["echo_reasoning"]);
    const [, refused, adapted] = model.chatRequests;
    const assistantOf = (request: typeof refused) =>
      request!.messages.find((message) => message.role === "assistant");
    expect(assistantOf(refused)).not.toHaveProperty("reasoning_content");
    expect(assistantOf(adapted)?.reasoning_content).toBe("I should read the file first.");
  });

  it("Mistral refusing reasoning_content: it is no longer sent", async () => {
    model.enqueue(
      {
        reasoning: "Plan: read.",
        toolCalls: [{ name: "read_file", arguments: { path: "a.txt" } }],
      },
      { error: recordedRejection("mistral-reasoning-content-forbidden.json") },
      { text: "answered" },
    );
    const run = await collect(input(["echo_reasoning"]));
    expect(run.outcome).toMatchObject({ reason: "completed", response: "answered" });
    const adapted = run.of("provider_adapted");
    expect(adapted.map((event) => event.quirk)).toEqual(["no_reasoning_echo"]);
    // Mistral's 422 has no OpenAI envelope; its words still reach the user.
    expect(adapted[0]?.message).toContain("Extra inputs are not permitted");
    expect(adapted[0]?.message).toContain("reasoning_content");
    const [, refused, sentAgain] = model.chatRequests;
    const assistantOf = (request: typeof refused) =>
      request!.messages.find((message) => message.role === "assistant");
    expect(assistantOf(refused)?.reasoning_content).toBe("Plan: read.");
    expect(assistantOf(sentAgain)).not.toHaveProperty("reasoning_content");
  });
});

describe("quirks known before the turn", () => {
  it("the first request is already adapted", async () => {
    model.enqueue({ text: "at once" });
    const run = await collect(
      input(["no_temperature", "no_top_p", "max_completion_tokens", "no_stream_options"]),
    );
    expect(run.outcome.reason).toBe("completed");
    expect(run.of("provider_adapted")).toEqual([]);
    const [first] = model.chatRequests;
    expect(first).not.toHaveProperty("temperature");
    expect(first).not.toHaveProperty("top_p");
    expect(first).not.toHaveProperty("max_tokens");
    expect(first).not.toHaveProperty("stream_options");
    expect(first?.max_completion_tokens).toBe(2_000);
  });
});

describe("what is not adapted stays a clear error", () => {
  it("the same rejection after its quirk is on fails the turn with the provider's message", async () => {
    model.setHandler(() => ({ error: recordedRejection("openai-temperature-value.json") }));
    const run = await collect(input(["no_temperature"]));
    expect(run.outcome.reason).toBe("error");
    expect(run.of("provider_adapted")).toEqual([]);
    expect(run.of("error")[0]).toMatchObject({
      code: "provider_rejected",
      message: expect.stringContaining("Only the default (1) value is supported."),
    });
    expect(model.chatRequests).toHaveLength(1);
  });

  it("an unrelated 400 is not adapted", async () => {
    model.enqueue({
      error: { status: 400, message: "Invalid 'messages[1].content': string too long." },
    });
    const run = await collect(input());
    expect(run.outcome.reason).toBe("error");
    expect(run.of("error")[0]?.message).toContain("string too long");
    expect(model.chatRequests).toHaveLength(1);
  });

  it("a retryable answer after adapting is still retried", async () => {
    model.enqueue(
      { error: recordedRejection("openai-max-tokens.json") },
      { error: scriptedErrors.serverError(503) },
      { text: "third time" },
    );
    const run = await collect(input());
    expect(run.outcome).toMatchObject({ reason: "completed", response: "third time" });
    expect(model.chatRequests[2]?.max_completion_tokens).toBe(2_000);
  });
});
