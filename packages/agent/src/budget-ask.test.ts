// A budget that asks: a turn reaching a limit with `onReach: "ask"` pauses with a `budget`
// approval; extended, it goes on; left unanswered, it ends with the synthesis after the timeout;
// without `ask` it ends as before.
import { type ScriptedModel, startScriptedModel } from "@gadget/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { baseInput, collect, readTool } from "./__fixtures__/turn.ts";

let model: ScriptedModel;
beforeEach(async () => {
  model = await startScriptedModel();
});
afterEach(async () => {
  await model.close();
});

const readCall = { toolCalls: [{ name: "read_file", arguments: { path: "README.md" } }] };

describe("a budget that asks", () => {
  it("pauses at the limit, is extended, and completes", async () => {
    model.enqueue(readCall, { text: "Done after two passes." });
    const asked: unknown[] = [];
    const run = await collect(
      baseInput(model, { tools: [readTool()], limits: { maxPasses: 1, onReach: "ask" } }),
      {
        onApproval: async (request) => {
          asked.push(request);
          return { approve: true, input: { extendBy: 2 } };
        },
      },
    );
    expect(asked).toEqual([
      expect.objectContaining({
        kind: "budget",
        tool: "budget",
        params: { limit: "maxPasses", used: 1, value: 1 },
      }),
    ]);
    expect(run.of("approval")).toHaveLength(1);
    expect(run.outcome).toMatchObject({ reason: "completed", response: "Done after two passes." });
    expect(run.outcome.passes).toBe(2);
  });

  it("extends by as much again when approved without an amount", async () => {
    const readOther = { toolCalls: [{ name: "read_file", arguments: { path: "LICENSE" } }] };
    model.enqueue(readCall, readOther, { text: "Done after three passes." });
    const run = await collect(
      baseInput(model, { tools: [readTool()], limits: { maxPasses: 2, onReach: "ask" } }),
      { onApproval: async () => ({ approve: true }) },
    );
    expect(run.outcome).toMatchObject({ reason: "completed", passes: 3 });
    expect(run.of("status").map((data) => data.message)).toContain(
      "The limit maxPasses was extended by 2 to 4",
    );
  });

  it("ends with the synthesis when nobody answers within askTimeoutMs", async () => {
    model.enqueue(readCall, { text: "Synthesized from what was read." });
    const run = await collect(
      baseInput(model, {
        tools: [readTool()],
        limits: { maxPasses: 1, onReach: "ask", askTimeoutMs: 50 },
      }),
      { onApproval: () => new Promise(() => undefined) },
    );
    expect(run.outcome.reason).toBe("max_passes");
    expect(run.outcome.response).toBe("Synthesized from what was read.");
    expect(run.of("status").map((data) => data.message)).toContainEqual(
      expect.stringContaining("Nobody answered"),
    );
    // The synthesis request offers no tools.
    expect(model.chatRequests.at(-1)?.tools).toBeUndefined();
  });

  it("ends as before when declined, or without ask", async () => {
    model.enqueue(readCall, { text: "Synthesized." }, readCall, { text: "Synthesized again." });
    const declined = await collect(
      baseInput(model, { tools: [readTool()], limits: { maxPasses: 1, onReach: "ask" } }),
      { onApproval: async () => ({ approve: false }) },
    );
    expect(declined.outcome.reason).toBe("max_passes");
    let asked = 0;
    const silent = await collect(
      baseInput(model, { tools: [readTool()], limits: { maxPasses: 1 } }),
      {
        onApproval: async () => {
          asked += 1;
          return { approve: true, input: { extendBy: 5 } };
        },
      },
    );
    expect(silent.outcome.reason).toBe("max_passes");
    expect(asked).toBe(0);
  });
});
