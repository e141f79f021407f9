// Recorded real provider traffic replayed byte for byte through a real turn: each recording in
// __fixtures__/providers must give the answer, thinking, tool calls and usage a careful reader gets.
import { readFileSync } from "node:fs";
import path from "node:path";
import { type ScriptedModel, startScriptedModel } from "@gadget/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { baseInput, type Collected, collect } from "./__fixtures__/turn.ts";
import { type AnyTool, defineTool } from "./tool.ts";

interface Recording {
  file: string;
  provider: string;
  source: { repository: string; path: string; commit: string };
  expected: {
    text: string;
    thinking?: string;
    toolCalls?: Array<{ id: string; name: string; arguments: Record<string, unknown> }>;
    usage?: { promptTokens: number; completionTokens: number };
    error?: string;
    /** False when the streamed error ends the turn (an invalid request) instead of being retried. */
    retried?: boolean;
    /** Provider fields the assistant message must carry back (e.g. `reasoning_details`). */
    echo?: string[];
  };
}

const fixtures = path.join(import.meta.dirname, "__fixtures__", "providers");
const recordings = (
  JSON.parse(readFileSync(path.join(fixtures, "index.json"), "utf8")) as {
    recordings: Recording[];
  }
).recordings;

/**
 * Recordings today's reader gets wrong, each with the gap it shows. `it.fails` keeps these
 * honest: once the reader handles one, its test fails until the entry is removed here.
 */
const knownGaps: Record<string, string> = {};

/** What the last chunk before the follow-up answer says: nothing, and no tokens. */
const followUp = { text: "Done.", usage: { promptTokens: 0, completionTokens: 0 } };

/** Accepts any arguments, so every recorded call reaches its tool. */
function permissiveTool(name: string): AnyTool {
  return defineTool({
    name,
    description: `Stands in for the recorded provider's ${name} tool.`,
    permission: "read",
    inputSchema: z.record(z.string(), z.unknown()),
    async execute() {
      return { ok: true, output: `${name} ran`, summary: `${name} ran` };
    },
  });
}

/** Events of the first model call: everything before its `cost_update`. */
function firstCall(run: Collected) {
  const end = run.events.findIndex((event) => event.type === "cost_update");
  const events = end < 0 ? run.events : run.events.slice(0, end + 1);
  const texts = (type: string) =>
    events
      .filter((event) => event.type === type)
      .map((event) => (event.data as { text: string }).text)
      .join("");
  const cost = end < 0 ? undefined : (run.events[end]?.data as { tokens: Record<string, number> });
  return { text: texts("token"), thinking: texts("thinking"), tokens: cost?.tokens };
}

let model: ScriptedModel;
beforeEach(async () => {
  model = await startScriptedModel();
});
afterEach(async () => {
  await model.close();
});

/** Whole SSE events per write, and the same bytes cut every 7 bytes (mid-line, mid-character). */
const deliveries = [
  { name: "event by event", recordedChunkBytes: undefined },
  { name: "cut every 7 bytes", recordedChunkBytes: 7 },
];

describe.each(deliveries)("recorded provider streams, $name", ({ recordedChunkBytes }) => {
  for (const recording of recordings) {
    const gap = knownGaps[recording.file];
    const test = gap ? it.fails : it;
    const title = `${recording.file}${gap ? ` (not yet: ${gap})` : ""}`;
    test(title, async () => {
      const { expected } = recording;
      const body = readFileSync(path.join(fixtures, recording.file), "utf8");
      model.enqueue({ recorded: body, recordedChunkBytes });
      model.setHandler(() => followUp);
      const names = new Set((expected.toolCalls ?? []).map((call) => call.name));
      if (names.size === 0) names.add("read_file");
      const run = await collect(
        baseInput(model, { tools: [...names].map((name) => permissiveTool(name)) }),
      );

      if (expected.error !== undefined && expected.retried === false) {
        // An invalid request inside a 200 stream ends the turn, after what came before it.
        const first = firstCall(run);
        expect(first.text).toBe(expected.text);
        expect(first.thinking).toBe(expected.thinking ?? "");
        expect(model.chatRequests).toHaveLength(1);
        expect(run.outcome.reason).toBe("error");
        expect(run.outcome.error).toMatchObject({ code: "provider_rejected" });
        expect(run.outcome.error?.message).toContain(expected.error);
        return;
      }
      if (expected.error !== undefined) {
        // A server error inside a 200 stream is retried like a 5xx; the retry gets the answer.
        expect(run.of("status").some((data) => data.phase === "retry")).toBe(true);
        expect(run.outcome.reason).toBe("completed");
        expect(run.outcome.response).toBe(followUp.text);
        return;
      }

      const first = firstCall(run);
      expect(first.text).toBe(expected.text);
      expect(first.thinking).toBe(expected.thinking ?? "");
      if (expected.usage) {
        expect(first.tokens).toMatchObject({
          input: expected.usage.promptTokens,
          output: expected.usage.completionTokens,
        });
      }

      const calls = expected.toolCalls ?? [];
      expect(
        run.of("tool_start").map((data) => ({ name: data.tool, arguments: data.params })),
      ).toEqual(calls.map((call) => ({ name: call.name, arguments: call.arguments })));
      if (calls.length === 0) {
        expect(model.chatRequests).toHaveLength(1);
        expect(run.outcome.response).toBe(expected.text);
        return;
      }

      // The follow-up request carries the calls as received and answers every call id.
      const messages = model.chatRequests[1]?.messages ?? [];
      const assistant = messages.findLast((message) => message.role === "assistant");
      const sent = assistant?.tool_calls ?? [];
      expect(
        sent.map((call) => ({
          name: call.function.name,
          arguments: JSON.parse(call.function.arguments || "{}") as unknown,
        })),
      ).toEqual(calls.map((call) => ({ name: call.name, arguments: call.arguments })));
      calls.forEach((call, position) => {
        if (call.id) expect(sent[position]?.id).toBe(call.id);
      });
      const answered = messages
        .filter((message) => message.role === "tool")
        .map((message) => message.tool_call_id);
      expect(answered).toEqual(sent.map((call) => call.id));
      for (const field of expected.echo ?? []) expect(assistant?.[field]).toBeTruthy();
      if (expected.echo?.includes("reasoning_details")) {
        // Fragments are joined into whole details, one per index, and their text is the thinking.
        const details = (assistant as { reasoning_details?: Array<Record<string, unknown>> })
          .reasoning_details;
        const keys = (details ?? []).map((detail) => `${detail.index}:${detail.type}`);
        expect(new Set(keys).size).toBe(keys.length);
        const text = (details ?? [])
          .filter((detail) => detail.type === "reasoning.text")
          .map((detail) => detail.text)
          .join("");
        if (text) expect(text).toBe(expected.thinking);
      }
      expect(run.outcome.response).toBe(followUp.text);
    });
  }
});
