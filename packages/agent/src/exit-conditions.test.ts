// Every exit reason of the engine, and the synthesis call (or graceful message) that follows each.
import { type ScriptedModel, startScriptedModel } from "@gadget/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { baseInput, type Collected, collect, toolLog } from "./__fixtures__/turn.ts";
import { gracefulMessage } from "./synthesis.ts";

let model: ScriptedModel;
beforeEach(async () => {
  model = await startScriptedModel();
  toolLog.length = 0;
});
afterEach(async () => {
  await model.close();
});

/** Answers synthesis requests (they offer no tools) with a fixed text. */
function synthesisAnswer(text = "Here is what I found.") {
  return { text, usage: { promptTokens: 10, completionTokens: 5 } };
}

function expectSynthesised(run: Collected, reason: string, text = "Here is what I found.") {
  const last = model.chatRequests.at(-1);
  expect(last?.tools).toBeUndefined();
  expect(last?.messages.at(-1)?.content).toContain(`(${reason})`);
  expect(last?.messages.at(-1)?.content).toContain("What was done in this turn");
  expect(run.of("response")).toEqual([{ message: text }]);
  expect(run.of("done")).toEqual([
    { reason, passes: run.outcome.passes, totalCost: expect.any(Number) },
  ]);
  expect(run.types().at(-1)).toBe("done");
  expect(run.outcome.reason).toBe(reason);
  expect(run.outcome.response).toBe(text);
  expect(run.outcome.messages.at(-1)).toMatchObject({ role: "assistant", content: text });
}

describe("exit conditions", () => {
  it("runs without limits until the model stops calling tools", async () => {
    let reads = 0;
    model.setHandler((request) => {
      reads += 1;
      return reads <= 12
        ? { toolCalls: [{ name: "read_file", arguments: { path: `file-${reads}` } }] }
        : {
            text: `read ${request.body.messages.filter((message) => message.role === "tool").length} files`,
          };
    });
    const run = await collect(baseInput(model));
    expect(run.outcome).toMatchObject({
      reason: "completed",
      passes: 13,
      response: "read 12 files",
    });
  });

  it("max_passes: stops at the pass limit and synthesises", async () => {
    model.enqueue(
      { toolCalls: [{ name: "read_file", arguments: { path: "a" } }] },
      synthesisAnswer(),
    );
    const run = await collect(baseInput(model, { limits: { maxPasses: 1 } }));
    expect(model.chatRequests).toHaveLength(2);
    expectSynthesised(run, "max_passes");
    expect(model.chatRequests[1]?.messages.at(-1)?.content).toContain("contents of a");
  });

  it("max_tool_calls: runs calls up to the limit, answers the rest, synthesises", async () => {
    model.enqueue(
      {
        toolCalls: [
          { id: "1", name: "read_file", arguments: { path: "a" } },
          { id: "2", name: "read_file", arguments: { path: "b" } },
          { id: "3", name: "read_file", arguments: { path: "c" } },
        ],
      },
      synthesisAnswer(),
    );
    const run = await collect(baseInput(model, { limits: { maxToolCalls: 2 } }));
    expect(toolLog.sort()).toEqual(["read a", "read b"]);
    const toolMessages = run.outcome.messages.filter((message) => message.role === "tool");
    expect(toolMessages.map((message) => message.toolCallId)).toEqual(["1", "2", "3"]);
    expect(toolMessages[2]?.content).toMatch(/limit of 2 tool calls/);
    expectSynthesised(run, "max_tool_calls");
  });

  it("token_budget: stops once the tokens the provider reported reach the budget", async () => {
    model.enqueue(
      {
        toolCalls: [{ name: "read_file", arguments: { path: "a" } }],
        usage: { promptTokens: 900, completionTokens: 200 },
      },
      synthesisAnswer(),
    );
    const run = await collect(baseInput(model, { limits: { tokenBudget: 1000 } }));
    expectSynthesised(run, "token_budget");
  });

  it("budget_exceeded: stops once the priced cost reaches the budget", async () => {
    model.enqueue(
      {
        toolCalls: [{ name: "read_file", arguments: { path: "a" } }],
        usage: { promptTokens: 100_000, completionTokens: 10_000 },
      },
      synthesisAnswer(),
    );
    const run = await collect(
      baseInput(model, {
        limits: { costBudget: 0.1 },
        provider: {
          baseUrl: model.baseUrl,
          apiKey: "k",
          modelId: "model-a",
          pricing: { inputPerMTok: 1, outputPerMTok: 10 },
        },
      }),
    );
    expectSynthesised(run, "budget_exceeded");
    expect(run.outcome.totalCost).toBeGreaterThanOrEqual(0.2);
  });

  it("stuck: the same call three times (alongside new ones) ends the turn", async () => {
    model.enqueue(
      { toolCalls: [{ name: "read_file", arguments: { path: "same" } }] },
      {
        toolCalls: [
          { name: "read_file", arguments: { path: "same" } },
          { name: "read_file", arguments: { path: "new-1" } },
        ],
      },
      {
        toolCalls: [
          { name: "read_file", arguments: { path: "same" } },
          { name: "read_file", arguments: { path: "new-2" } },
        ],
      },
      synthesisAnswer(),
    );
    const run = await collect(baseInput(model));
    expect(run.outcome.passes).toBe(3);
    expectSynthesised(run, "stuck");
    expect(run.of("status").at(-1)?.message).toMatch(/read_file was called 3 times/);
  });

  it("stuck: the same failing call twice ends the turn", async () => {
    model.enqueue(
      {
        toolCalls: [
          { name: "run_command", arguments: { command: "npm test" } },
          { name: "read_file", arguments: { path: "a" } },
        ],
      },
      {
        toolCalls: [
          { name: "run_command", arguments: { command: "npm test" } },
          { name: "read_file", arguments: { path: "b" } },
        ],
      },
      synthesisAnswer(),
    );
    const run = await collect(baseInput(model));
    expectSynthesised(run, "stuck");
    expect(run.of("status").at(-1)?.message).toMatch(/run_command failed 2 times/);
  });

  it("all_tools_duplicate: a response repeating only earlier calls is not run and ends the turn", async () => {
    model.enqueue(
      { toolCalls: [{ name: "read_file", arguments: { path: "a" } }] },
      { toolCalls: [{ id: "again", name: "read_file", arguments: { path: "a" } }] },
      synthesisAnswer(),
    );
    const run = await collect(baseInput(model));
    expect(toolLog).toEqual(["read a"]);
    const repeated = run.outcome.messages.find((message) => message.toolCallId === "again");
    expect(repeated?.content).toMatch(/already made/);
    expectSynthesised(run, "all_tools_duplicate");
  });

  it("does not count a re-read after a successful write as a duplicate", async () => {
    model.enqueue(
      { toolCalls: [{ name: "read_file", arguments: { path: "a" } }] },
      { toolCalls: [{ name: "write_file", arguments: { path: "a", content: "fixed" } }] },
      { toolCalls: [{ name: "read_file", arguments: { path: "a" } }] },
      { text: "verified" },
    );
    const run = await collect(baseInput(model));
    expect(run.outcome.reason).toBe("completed");
    expect(toolLog).toEqual(["read a", "write a=fixed", "read a"]);
  });

  it("answers with the graceful message when nothing was gathered", async () => {
    model.setHandler(() => ({ text: "" }));
    const run = await collect(baseInput(model));
    expect(run.outcome.reason).toBe("stuck");
    expect(model.chatRequests).toHaveLength(3);
    expect(run.of("response")).toEqual([{ message: gracefulMessage }]);
  });

  it("answers mechanically when the synthesis call itself fails", async () => {
    model.enqueue(
      { toolCalls: [{ name: "read_file", arguments: { path: "a" } }] },
      { error: { status: 400, message: "bad request" } },
    );
    const run = await collect(baseInput(model, { limits: { maxPasses: 1 } }));
    expect(run.outcome.reason).toBe("max_passes");
    expect(run.outcome.response).toMatch(
      /I stopped before finishing \(the limit of 1 passes was reached\)/,
    );
    expect(run.outcome.response).toMatch(/read_file: read a/);
  });
});
