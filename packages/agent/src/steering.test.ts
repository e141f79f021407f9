// Steering a running turn: a user's message joins the conversation at the next step boundary
// (after the tool results of the pass it arrived in), an interrupting one stops the tool calls in
// flight first, and one that arrives while the model answers keeps the turn going.
import { type ScriptedModel, startScriptedModel } from "@gadget/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { baseInput, collect, gatedTool, readTool } from "./__fixtures__/turn.ts";
import { SteeringInbox } from "./steering.ts";

let model: ScriptedModel;
beforeEach(async () => {
  model = await startScriptedModel();
});
afterEach(async () => {
  await model.close();
});

const contents = (index: number) =>
  (model.chatRequests[index]?.messages ?? []).map((message) => ({
    role: message.role,
    content: typeof message.content === "string" ? message.content : "",
  }));

describe("steering", () => {
  it("adds a message sent during a pass after that pass's tool results", async () => {
    const inbox = new SteeringInbox();
    model.enqueue(
      async () => {
        // Arrives while the model is still answering the first request.
        inbox.push({ id: "m1", text: "Also read the licence" });
        return { toolCalls: [{ name: "read_file", arguments: { path: "README.md" } }] };
      },
      { text: "Both read." },
    );
    const run = await collect(baseInput(model, { tools: [readTool()] }), { steering: inbox });
    expect(run.outcome.reason).toBe("completed");
    expect(run.of("user_message")).toEqual([{ messageId: "m1", text: "Also read the licence" }]);
    const second = contents(1);
    const tool = second.findIndex((message) => message.role === "tool");
    const steered = second.findIndex((message) => message.content === "Also read the licence");
    expect(tool).toBeGreaterThan(0);
    expect(steered).toBe(tool + 1);
    expect(second[steered]?.role).toBe("user");
    // Re-sent (a reconnect): taken once.
    expect(inbox.push({ id: "m1", text: "Also read the licence" })).toBe(false);
  });

  it("stops the tool calls in flight for an interrupting message and sends it at once", async () => {
    const inbox = new SteeringInbox();
    const slow = gatedTool();
    model.enqueue({ toolCalls: [{ name: "slow_read", arguments: { id: "a" } }] }, { text: "Ok." });
    const running = collect(baseInput(model, { tools: [slow.tool] }), { steering: inbox });
    while (slow.started.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    inbox.push({ id: "m2", text: "Stop that, do this instead", interrupt: true });
    const run = await running;
    slow.release();
    expect(run.outcome.reason).toBe("completed");
    expect(run.of("tool_result").at(-1)).toMatchObject({ ok: false });
    const second = contents(1);
    expect(second.at(-2)).toEqual({ role: "user", content: "Stop that, do this instead" });
    expect(second.find((message) => message.role === "tool")?.content).toContain(
      "the user interrupted",
    );
    expect(model.chatRequests).toHaveLength(2);
  });

  it("goes on when a message arrives while the model writes its answer", async () => {
    const inbox = new SteeringInbox();
    model.enqueue(
      async () => {
        inbox.push({ id: "m3", text: "And in French?" });
        return { text: "Hello." };
      },
      { text: "Bonjour." },
    );
    const run = await collect(baseInput(model, { tools: [readTool()] }), { steering: inbox });
    expect(run.outcome.response).toBe("Bonjour.");
    const second = contents(1);
    expect(second.slice(-3, -1)).toEqual([
      { role: "assistant", content: "Hello." },
      { role: "user", content: "And in French?" },
    ]);
  });
});
