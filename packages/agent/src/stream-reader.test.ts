// The reader on stream shapes no recording in __fixtures__/providers shows yet (each test says
// which provider sends it), and the turn-level effects of what it reads: provider fields sent
// back on the next request and after a resume, and errors inside a 200 stream.
import { turnMessageSchema } from "@gadget/protocol";
import { type ScriptedModel, startScriptedModel } from "@gadget/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { baseInput, collect } from "./__fixtures__/turn.ts";
import type { ChatChunk } from "./chat-model.ts";
import { type StreamPiece, StreamReader } from "./stream-reader.ts";
import { defineTool } from "./tool.ts";

/** A chunk with one choice whose delta is `delta`. */
function chunk(delta: Record<string, unknown>, extra: Record<string, unknown> = {}): ChatChunk {
  return {
    id: "chunk",
    object: "chat.completion.chunk",
    created: 0,
    model: "model",
    choices: [{ index: 0, delta, finish_reason: null, logprobs: null }],
    ...extra,
  } as ChatChunk;
}

/** Reads chunks; returns the pieces as shown (in order) and the reading. */
function read(chunks: ChatChunk[]) {
  const reader = new StreamReader({ callIdPrefix: "call-1" });
  const shown: StreamPiece[] = [];
  for (const part of chunks) shown.push(...reader.read(part));
  const { pieces, reading } = reader.finish();
  shown.push(...pieces);
  const joined = (kind: StreamPiece["kind"]) =>
    shown
      .filter((piece) => piece.kind === kind)
      .map((piece) => piece.text)
      .join("");
  return { shown, text: joined("text"), thinking: joined("thinking"), reading };
}

const contents = (...texts: string[]) => texts.map((content) => chunk({ content }));

describe("a thinking block at the start of the answer", () => {
  it("becomes thinking even when its tags are split across chunks", () => {
    const result = read(
      contents("\n<thi", "nk>\nThe user", " wants 4.\n</th", "ink>\n\n", "2 + 2 = 4"),
    );
    expect(result.thinking).toBe("The user wants 4.");
    expect(result.text).toBe("2 + 2 = 4");
    // Thinking is shown as it arrives, before the closing tag is seen.
    expect(result.shown[0]).toEqual({ kind: "thinking", text: "The user" });
  });

  it("is recognised as <thinking> and <reasoning> too", () => {
    expect(read(contents("<thinking>plan</thinking>done"))).toMatchObject({
      thinking: "plan",
      text: "done",
    });
    expect(read(contents("<reasoning>", "plan", "</reasoning>", " done"))).toMatchObject({
      thinking: "plan",
      text: "done",
    });
  });

  it("runs over several blocks in a row, and an empty block leaves just the answer", () => {
    // Bedrock's gpt-oss wraps each reasoning delta in tags of its own.
    expect(
      read(
        contents("<reasoning>We have </reasoning><reasoning>", "two parts.</reasoning>", "Done"),
      ),
    ).toMatchObject({ thinking: "We have two parts.", text: "Done" });
    // Qwen3 with thinking switched off still opens with an empty block.
    expect(read(contents("<think>\n\n</think>\n\n", "Hello"))).toMatchObject({
      thinking: "",
      text: "Hello",
    });
  });

  it("is left in the answer when it does not open the answer", () => {
    const answer = "Models like Qwen3 wrap reasoning in <think></think> tags.";
    expect(read(contents(answer))).toMatchObject({ thinking: "", text: answer });
    expect(read(contents("<", "div>hi</div>"))).toMatchObject({ text: "<div>hi</div>" });
  });

  it("is thinking when the stream ends inside it", () => {
    expect(read(contents("<think>still going"))).toMatchObject({
      thinking: "still going",
      text: "",
    });
  });
});

describe("tool-call fragments", () => {
  it("without index go to the call with their id, and without either to the latest call", () => {
    // Gemini's OpenAI-compatible API sends no `index`; fragments may follow without an id.
    const { reading } = read([
      chunk({
        tool_calls: [
          { id: "a", type: "function", function: { name: "read_file", arguments: '{"path":' } },
        ],
      }),
      chunk({ tool_calls: [{ function: { arguments: '"a.ts"}' } }] }),
      chunk({
        tool_calls: [{ id: "b", function: { name: "list_files", arguments: "{}" } }],
      }),
      chunk({ tool_calls: [{ id: "a", function: { arguments: "" } }] }),
    ]);
    expect(reading.toolCalls).toEqual([
      { id: "a", name: "read_file", arguments: '{"path":"a.ts"}' },
      { id: "b", name: "list_files", arguments: "{}" },
    ]);
  });

  it("of one call in one delta are appended in order, and empty ids and names are ignored", () => {
    const { reading } = read([
      chunk({
        tool_calls: [
          { index: 0, id: "call_x", function: { name: "grep", arguments: '{"pat' } },
          { index: 0, id: "", function: { name: "", arguments: 'tern":' } },
          { index: 0, function: { arguments: '"TODO"}' } },
        ],
      }),
    ]);
    expect(reading.toolCalls).toEqual([
      { id: "call_x", name: "grep", arguments: '{"pattern":"TODO"}' },
    ]);
  });

  it("at one index but with a new id are a new call (Gemini numbers parallel calls all 0)", () => {
    const { reading } = read([
      chunk({
        tool_calls: [{ index: 0, id: "a", function: { name: "read_file", arguments: "{}" } }],
      }),
      chunk({
        tool_calls: [{ index: 0, id: "b", function: { name: "list_dir", arguments: "{}" } }],
      }),
      chunk({ tool_calls: [{ index: 0, id: "b", function: { arguments: "" } }] }),
    ]);
    expect(reading.toolCalls).toEqual([
      { id: "a", name: "read_file", arguments: "{}" },
      { id: "b", name: "list_dir", arguments: "{}" },
    ]);
  });

  it("keep a name sent again with every fragment once, and join a name sent in pieces", () => {
    const { reading } = read([
      chunk({ tool_calls: [{ index: 0, id: "c1", function: { name: "read_file" } }] }),
      chunk({ tool_calls: [{ index: 0, function: { name: "read_file", arguments: "{}" } }] }),
      chunk({ tool_calls: [{ index: 1, id: "c2", function: { name: "list_" } }] }),
      chunk({ tool_calls: [{ index: 1, function: { name: "files", arguments: "{}" } }] }),
    ]);
    expect(reading.toolCalls.map((call) => call.name)).toEqual(["read_file", "list_files"]);
  });

  it("keep a call's extra_content, fragments of it merged", () => {
    // Gemini: the thought signature on the call, sometimes in a delta of its own.
    const { reading } = read([
      chunk({
        tool_calls: [
          {
            id: "fc-1",
            type: "function",
            function: { name: "read_file", arguments: '{"path":"a"}' },
            extra_content: { google: { thought_signature: "EjQKMgEM" } },
          },
        ],
      }),
      chunk({ tool_calls: [{ extra_content: { google: { extra: 1 } } }] }),
    ]);
    expect(reading.toolCalls[0]?.providerFields).toEqual({
      extra_content: { google: { thought_signature: "EjQKMgEM", extra: 1 } },
    });
  });
});

describe("usage and reasoning", () => {
  it("takes the usage of the last chunk that carries one, never a sum", () => {
    // Perplexity sends a running total in every chunk; Groq repeats the final one.
    const usage = (completion: number) => ({
      usage: { prompt_tokens: 11, completion_tokens: completion, total_tokens: 11 + completion },
    });
    const { reading } = read([
      chunk({ content: "a" }, usage(1)),
      chunk({ content: "b" }, usage(3)),
      chunk({}, usage(5)),
      chunk({}, usage(5)),
    ]);
    expect(reading.usage).toMatchObject({ prompt_tokens: 11, completion_tokens: 5 });
  });

  it("joins OpenRouter's reasoning_details fragments into whole details, in order", () => {
    const detail = (fields: Record<string, unknown>) => chunk({ reasoning_details: [fields] });
    const { reading } = read([
      detail({ type: "reasoning.text", text: "First", format: "anthropic-claude-v1", index: 0 }),
      detail({ type: "reasoning.text", text: " step", format: "anthropic-claude-v1", index: 0 }),
      detail({ type: "reasoning.text", text: "", signature: "c2ln", index: 0 }),
      detail({ type: "reasoning.encrypted", data: "ZW5j", id: "r1", index: 1 }),
    ]);
    expect(reading.providerFields).toEqual({
      reasoning_details: [
        {
          type: "reasoning.text",
          text: "First step",
          format: "anthropic-claude-v1",
          signature: "c2ln",
          index: 0,
        },
        { type: "reasoning.encrypted", data: "ZW5j", id: "r1", index: 1 },
      ],
    });
  });
});

describe("in a turn", () => {
  let model: ScriptedModel;
  beforeEach(async () => {
    model = await startScriptedModel();
  });
  afterEach(async () => {
    await model.close();
  });

  const readFile = defineTool({
    name: "read_file",
    description: "Reads a file.",
    permission: "read",
    inputSchema: z.object({ path: z.string() }),
    async execute(input) {
      return { ok: true, output: `contents of ${input.path}`, summary: "read" };
    },
  });

  /** A stream written for this test in the shape Gemini's OpenAI-compatible API sends. */
  const signedCall = [
    `data: ${JSON.stringify({
      choices: [
        {
          index: 0,
          delta: {
            role: "assistant",
            tool_calls: [
              {
                extra_content: { google: { thought_signature: "EjQKMgEMOdbH" } },
                function: { arguments: '{"path":"README.md"}', name: "read_file" },
                id: "function-call-1",
                type: "function",
              },
            ],
          },
          finish_reason: "stop",
        },
      ],
      object: "chat.completion.chunk",
    })}`,
    "data: [DONE]",
    "",
  ].join("\n\n");

  it("sends a call's extra_content back on the next request, and after a resume", async () => {
    model.enqueue({ recorded: signedCall }, { text: "Read it." });
    const first = await collect(baseInput(model, { tools: [readFile] }));
    // The call ran although finish_reason said "stop".
    expect(first.of("tool_start").map((data) => data.tool)).toEqual(["read_file"]);
    const sent = model.chatRequests[1]?.messages.findLast(
      (message) => message.role === "assistant",
    );
    expect(sent?.tool_calls?.[0]).toMatchObject({
      id: "function-call-1",
      extra_content: { google: { thought_signature: "EjQKMgEMOdbH" } },
    });

    // Stored, carried in a work order and resumed: the signature is still sent.
    const stored = first.outcome.messages
      .slice(0, -1)
      .map((message) => turnMessageSchema.parse(JSON.parse(JSON.stringify(message))));
    model.enqueue({ text: "Read it." });
    await collect(baseInput(model, { tools: [readFile], resume: { messages: stored } }));
    const resumed = model.chatRequests[2]?.messages.findLast(
      (message) => message.role === "assistant",
    );
    expect(resumed?.tool_calls?.[0]).toMatchObject({
      extra_content: { google: { thought_signature: "EjQKMgEMOdbH" } },
    });
  });

  const streamedFailure = (error: Record<string, unknown>) =>
    [
      `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: "Par" } }] })}`,
      `data: ${JSON.stringify({ error })}`,
      "",
    ].join("\n\n");

  it("retries an overload or rate limit sent inside a 200 stream", async () => {
    model.enqueue(
      { recorded: streamedFailure({ message: "Overloaded", type: "overloaded_error" }) },
      { recorded: streamedFailure({ message: "Rate limit exceeded", code: 429 }) },
      { text: "Answered." },
    );
    const run = await collect(baseInput(model));
    expect(run.of("status").filter((data) => data.phase === "retry")).toHaveLength(2);
    expect(run.outcome).toMatchObject({ reason: "completed", response: "Answered." });
  });

  it("ends the turn on an invalid request sent inside a 200 stream, without retrying", async () => {
    model.enqueue({
      recorded: streamedFailure({ message: "Bad tool schema", type: "invalid_request_error" }),
    });
    const run = await collect(baseInput(model));
    expect(model.chatRequests).toHaveLength(1);
    expect(run.outcome.reason).toBe("error");
    expect(run.outcome.error).toMatchObject({ code: "provider_rejected" });
    expect(run.outcome.error?.message).toContain("Bad tool schema");
  });
});
