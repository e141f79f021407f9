// Context compaction keeps long turns going: proactive pruning and summaries, and the reactive
// path when the provider answers with a context-length error.
import {
  type ScriptedModel,
  type ScriptedRequest,
  scriptedErrors,
  startScriptedModel,
} from "@gadget/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { baseInput, collect } from "./__fixtures__/turn.ts";
import { contextWindowFromError, estimateTokens, prunedOutput } from "./compaction.ts";
import { defineTool } from "./tool.ts";

let model: ScriptedModel;
beforeEach(async () => {
  model = await startScriptedModel();
});
afterEach(async () => {
  await model.close();
});

const bigRead = defineTool({
  name: "big_read",
  description: "Returns a large file.",
  permission: "read",
  inputSchema: z.object({ path: z.string() }),
  async execute({ path }) {
    return { ok: true, output: `${path}: ${"x".repeat(2_000)}`, summary: `read ${path}` };
  },
});

const summaryNote =
  "## Goal\nread files\n## Discoveries\nall x\n## Accomplished\nread some\n## Files\nfile-1";

function isSummaryRequest(request: ScriptedRequest): boolean {
  return String(request.body.messages[0]?.content).includes("compact the working memory");
}

/** Reads the given big files one per pass (with `chatter` text each time), then answers. */
function reader(paths: string[], chatter = "") {
  let next = 0;
  return (request: ScriptedRequest) => {
    if (isSummaryRequest(request)) return { text: summaryNote };
    const path = paths[next];
    next += 1;
    return path
      ? { text: chatter, toolCalls: [{ name: "big_read", arguments: { path } }] }
      : { text: "All files read." };
  };
}

const files = (count: number) => Array.from({ length: count }, (_, index) => `file-${index + 1}`);

describe("compaction", () => {
  it("prunes old tool outputs when the prompt nears the context window", async () => {
    // file-1 is read again at the end: its output was pruned, so that is not a duplicate.
    model.setHandler(reader([...files(6), "file-1"]));
    const run = await collect(
      baseInput(model, {
        tools: [bigRead],
        provider: { baseUrl: model.baseUrl, apiKey: "k", modelId: "m", contextWindow: 3_000 },
      }),
    );
    expect(run.outcome).toMatchObject({ reason: "completed", response: "All files read." });
    const last = model.chatRequests.at(-1);
    const toolContents = last?.messages
      .filter((message) => message.role === "tool")
      .map((message) => message.content);
    expect(toolContents).toContain(prunedOutput);
    // The newest results are still there in full.
    expect(toolContents?.at(-1)).toMatch(/^file-1: x{2000}$/);
    expect(toolContents?.at(-2)).toMatch(/^file-6: x{2000}$/);
    for (const request of model.chatRequests)
      expect(estimateTokens(request.messages as never)).toBeLessThan(3_000);
  });

  it("summarises older messages into a Goal/Discoveries/Accomplished/Files note when pruning is not enough", async () => {
    model.setHandler(reader(files(8), `Thinking out loud: ${"y".repeat(1_500)}`));
    const run = await collect(
      baseInput(model, {
        tools: [bigRead],
        provider: { baseUrl: model.baseUrl, apiKey: "k", modelId: "m", contextWindow: 3_000 },
      }),
    );
    expect(run.outcome).toMatchObject({ reason: "completed", response: "All files read." });
    const summaries = model.requests
      .map((request) => request.body)
      .filter((body) => String(body?.messages[0]?.content).includes("compact the working memory"));
    expect(summaries.length).toBeGreaterThan(0);
    expect(summaries[0]?.tools).toBeUndefined();
    expect(String(summaries[0]?.messages[1]?.content)).toContain("CALL big_read");
    expect(run.of("status").some((data) => data.phase === "compaction")).toBe(true);
    const last = model.chatRequests.at(-1);
    expect(String(last?.messages.find((message) => message.role === "user")?.content)).toContain(
      "<summary-of-earlier-work>\n## Goal",
    );
    expect(run.outcome.state.compactions).toBeGreaterThan(0);
    expect(run.outcome.messages[0]?.content).toContain("## Accomplished");
  });

  it("compacts and retries once when the provider answers with a context-length error", async () => {
    model.enqueue(
      { toolCalls: [{ name: "big_read", arguments: { path: "file-1" } }] },
      { error: scriptedErrors.contextLength(1_000, 1_200) },
      { text: summaryNote },
      { text: "Done despite the small window." },
    );
    const run = await collect(
      baseInput(model, {
        tools: [bigRead],
        provider: { baseUrl: model.baseUrl, apiKey: "k", modelId: "m" },
      }),
    );
    expect(run.outcome).toMatchObject({
      reason: "completed",
      response: "Done despite the small window.",
    });
    expect(model.chatRequests).toHaveLength(4);
    expect(model.chatRequests[2]?.tools).toBeUndefined();
    const retried = model.chatRequests[3];
    expect(JSON.stringify(retried?.messages)).not.toContain("x".repeat(2_000));
    expect(String(retried?.messages.find((message) => message.role === "user")?.content)).toContain(
      "<summary-of-earlier-work>",
    );
  });

  it("fails with context_length_exceeded when the retry is refused too", async () => {
    model.enqueue(
      { error: scriptedErrors.contextLength() },
      { error: scriptedErrors.contextLength() },
    );
    const run = await collect(baseInput(model));
    expect(run.outcome.reason).toBe("error");
    expect(run.outcome.error?.code).toBe("context_length_exceeded");
  });

  it("reads the window size from the provider's error text", () => {
    expect(
      contextWindowFromError(
        "This model's maximum context length is 8,192 tokens. However, you requested 9000",
      ),
    ).toBe(8192);
    expect(contextWindowFromError("prompt too long")).toBeUndefined();
  });
});
