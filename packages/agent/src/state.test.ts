// TurnState is plain, versioned JSON; a turn resumes from it or from its stored messages alone.
import type { ITurnMessage } from "@gadget/protocol";
import { type ScriptedModel, startScriptedModel } from "@gadget/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { baseInput, collect, toolLog } from "./__fixtures__/turn.ts";
import { interruptedOutput, parseTurnState, stateFromMessages, turnStateSchema } from "./state.ts";

let model: ScriptedModel;
beforeEach(async () => {
  model = await startScriptedModel();
  toolLog.length = 0;
});
afterEach(async () => {
  await model.close();
});

const at = new Date("2025-01-01T00:00:00Z");

describe("TurnState", () => {
  it("survives a JSON round trip and is validated on the way back", async () => {
    model.enqueue({ toolCalls: [{ name: "read_file", arguments: { path: "a" } }] }, { text: "ok" });
    const run = await collect(baseInput(model));
    const revived = parseTurnState(JSON.parse(JSON.stringify(run.outcome.state)));
    expect(revived).toEqual(run.outcome.state);
    expect(turnStateSchema.safeParse({ ...run.outcome.state, schemaVersion: 99 }).success).toBe(
      false,
    );
    expect(parseTurnState({ schemaVersion: 1, messages: "nope" })).toBeUndefined();
  });

  it("rebuilds an interrupted turn from its messages, giving unanswered calls a result", () => {
    const messages: ITurnMessage[] = [
      { role: "user", content: "fix it", createdAt: at },
      {
        role: "assistant",
        content: "",
        toolCalls: [
          { id: "a", name: "read_file", arguments: '{"path":"a"}' },
          { id: "b", name: "read_file", arguments: '{"path":"b"}' },
        ],
        createdAt: at,
      },
      { role: "tool", content: "contents of b", toolCallId: "b", name: "read_file", createdAt: at },
    ];
    const state = stateFromMessages({
      goal: "fix it",
      mode: "agent",
      model: "m",
      now: at,
      messages,
    });
    expect(state.passCount).toBe(1);
    expect(state.toolCallCount).toBe(2);
    expect(state.messages.slice(2).map((message) => [message.toolCallId, message.content])).toEqual(
      [
        ["a", interruptedOutput],
        ["b", "contents of b"],
      ],
    );
  });

  it("continues an interrupted turn from stored messages on another drone", async () => {
    model.enqueue({ text: "Finished after the restart." });
    const run = await collect(
      baseInput(model, {
        goal: "fix it",
        resume: {
          state: { garbage: true },
          messages: [
            { role: "user", content: "fix it", createdAt: at },
            {
              role: "assistant",
              content: "<thinking>look first</thinking>\n",
              toolCalls: [{ id: "a", name: "read_file", arguments: '{"path":"a"}' }],
              createdAt: at,
            },
          ],
        },
      }),
    );
    expect(run.outcome).toMatchObject({
      reason: "completed",
      passes: 2,
      response: "Finished after the restart.",
    });
    expect(toolLog).toEqual([]);
    const sent = model.chatRequests[0]?.messages ?? [];
    expect(sent.find((message) => message.role === "tool")).toMatchObject({
      tool_call_id: "a",
      content: interruptedOutput,
    });
    expect(sent.filter((message) => message.role === "user")[0]?.content).toBe("fix it");
    expect(run.of("pre_enrichment")).toEqual([]);
  });

  it("does not call the model again for a turn whose last stored message is the answer", async () => {
    const run = await collect(
      baseInput(model, {
        resume: {
          messages: [
            { role: "user", content: "hi", createdAt: at },
            { role: "assistant", content: "<thinking>easy</thinking>\nHello!", createdAt: at },
          ],
        },
      }),
    );
    expect(model.chatRequests).toHaveLength(0);
    expect(run.outcome).toMatchObject({ reason: "completed", response: "Hello!" });
  });

  it("rejects input it cannot run with an error event and one done", async () => {
    const run = await collect({
      ...baseInput(model),
      provider: { baseUrl: model.baseUrl, apiKey: "k", modelId: "" },
    });
    expect(run.types()).toEqual(["error", "done"]);
    expect(run.outcome.error?.code).toBe("invalid_input");
  });
});
