// Model escalation: two low-progress passes switch to the stronger model, once.
import { type ScriptedModel, startScriptedModel } from "@gadget/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { baseInput, collect } from "./__fixtures__/turn.ts";

let model: ScriptedModel;
beforeEach(async () => {
  model = await startScriptedModel();
});
afterEach(async () => {
  await model.close();
});

const provider = (baseUrl: string) => ({
  baseUrl,
  apiKey: "k",
  modelId: "small-model",
  escalationModelId: "big-model",
});

describe("escalation", () => {
  it("switches to the escalation model after two empty answers and announces it", async () => {
    model.setHandler((request) =>
      request.body.model === "big-model" ? { text: "Solved it." } : { text: "" },
    );
    const run = await collect(baseInput(model, { provider: provider(model.baseUrl) }));
    expect(model.chatRequests.map((request) => request.model)).toEqual([
      "small-model",
      "small-model",
      "big-model",
    ]);
    const escalations = run.of("status").filter((data) => data.phase === "escalation");
    expect(escalations).toEqual([
      expect.objectContaining({
        model: "big-model",
        message: expect.stringMatching(/Escalating to a stronger model: big-model/),
      }),
    ]);
    expect(run.outcome).toMatchObject({ reason: "completed", response: "Solved it." });
    expect(run.outcome.state).toMatchObject({ activeModel: "big-model", escalated: true });
  });

  it("escalates on repeated calls, and never twice", async () => {
    let call = 0;
    model.setHandler((request) => {
      if (!request.hasTools) return { text: "Synthesised." };
      call += 1;
      // Failing the same command over and over: low progress on every pass.
      return {
        toolCalls: [
          { name: "run_command", arguments: { command: `npm test -- --seed ${call % 2}` } },
        ],
      };
    });
    const run = await collect(baseInput(model, { provider: provider(model.baseUrl) }));
    const escalations = run.of("status").filter((data) => data.phase === "escalation");
    expect(escalations).toHaveLength(1);
    expect(run.outcome.reason).toBe("stuck");
    const models = model.chatRequests.map((request) => request.model);
    expect(models.slice(0, 2)).toEqual(["small-model", "small-model"]);
    expect(new Set(models.slice(2))).toEqual(new Set(["big-model"]));
  });

  it("does not escalate without an escalation model", async () => {
    model.setHandler(() => ({ text: "" }));
    const run = await collect(baseInput(model));
    expect(run.of("status").filter((data) => data.phase === "escalation")).toEqual([]);
    expect(run.outcome.reason).toBe("stuck");
  });
});
