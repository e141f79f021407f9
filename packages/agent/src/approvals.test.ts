// Approvals with policy on-write: approve, deny, edited input, pause without a handler, and
// resuming a turn from the state saved while it waited.
import type { AgentEvent } from "@gadget/protocol";
import { type ScriptedModel, startScriptedModel } from "@gadget/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { baseInput, collect, fastTunables, toolLog, wrap } from "./__fixtures__/turn.ts";
import { ApprovalChannel, declinedOutput } from "./approvals.ts";
import { runTurn } from "./run-turn.ts";
import type { TurnState } from "./state.ts";
import { defineTool } from "./tool.ts";

let model: ScriptedModel;
beforeEach(async () => {
  model = await startScriptedModel();
  toolLog.length = 0;
});
afterEach(async () => {
  await model.close();
});

const readThenWrite = {
  toolCalls: [
    { id: "r1", name: "read_file", arguments: { path: "a.txt" } },
    { id: "w1", name: "write_file", arguments: { path: "a.txt", content: "new" } },
  ],
};

describe("approvals (on-write)", () => {
  it("announces the write, runs the earlier read, waits, then runs the approved write", async () => {
    model.enqueue(readThenWrite, { text: "Updated a.txt." });
    const approvals = new ApprovalChannel();
    const order: string[] = [];
    const run = await collect(baseInput(model, { approval: "on-write" }), {
      onApproval: async (request, context) => {
        order.push(`asked ${request.id} after [${toolLog.join(", ")}]`);
        setTimeout(() => approvals.decide(request.id, { approve: true }), 5);
        return approvals.handler(request, context);
      },
    });
    expect(run.of("approval")).toEqual([
      {
        approvals: [
          {
            id: "approval-1-2",
            callId: "w1",
            tool: "write_file",
            params: { path: "a.txt", content: "new" },
            description: "Write a.txt (3 characters)",
          },
        ],
      },
    ]);
    expect(order).toEqual(["asked approval-1-2 after [read a.txt]"]);
    expect(toolLog).toEqual(["read a.txt", "write a.txt=new"]);
    const types = run.types();
    expect(types.indexOf("approval")).toBeLessThan(types.indexOf("tool_start"));
    expect(run.outcome.reason).toBe("completed");
  });

  it("returns 'declined by the user' to the model for a denied call and carries on", async () => {
    model.enqueue(readThenWrite, { text: "Understood, I left a.txt alone." });
    const run = await collect(baseInput(model, { approval: "on-write" }), {
      onApproval: async () => ({ approve: false }),
    });
    expect(toolLog).toEqual(["read a.txt"]);
    const result = model.chatRequests[1]?.messages.find((message) => message.tool_call_id === "w1");
    expect(result?.content).toBe(declinedOutput);
    expect(run.of("tool_result").find((data) => data.callId === "w1")).toMatchObject({
      ok: false,
      summary: declinedOutput,
    });
    expect(run.outcome).toMatchObject({
      reason: "completed",
      response: "Understood, I left a.txt alone.",
    });
  });

  it("runs an approved call with the input the user edited", async () => {
    model.enqueue(readThenWrite, { text: "ok" });
    await collect(baseInput(model, { approval: "on-write" }), {
      onApproval: async () => ({ approve: true, input: { path: "a.txt", content: "edited" } }),
    });
    expect(toolLog).toEqual(["read a.txt", "write a.txt=edited"]);
  });

  it("does not ask for read calls or when the policy is auto", async () => {
    model.enqueue(readThenWrite, { text: "ok" });
    const run = await collect(baseInput(model, { approval: "auto" }), {
      onApproval: async () => {
        throw new Error("must not be asked");
      },
    });
    expect(run.of("approval")).toEqual([]);
    expect(toolLog).toEqual(["read a.txt", "write a.txt=new"]);
  });

  it("pauses with approval_needed when nobody can decide, and resumes with the decision", async () => {
    model.enqueue(readThenWrite);
    const paused = await collect(baseInput(model, { approval: "on-write" }));
    expect(paused.outcome.reason).toBe("approval_needed");
    expect(paused.of("done")).toEqual([{ reason: "approval_needed", passes: 1, totalCost: 0 }]);
    expect(paused.of("response")).toEqual([]);
    expect(toolLog).toEqual(["read a.txt"]);
    expect(paused.outcome.state.pendingApprovals.map((request) => request.id)).toEqual([
      "approval-1-2",
    ]);

    // The host stores the state as JSON, then resumes on another drone with the decision.
    const stored = JSON.parse(JSON.stringify(paused.outcome.state)) as unknown;
    model.enqueue({ text: "Wrote a.txt." });
    const resumed = await collect(
      baseInput(model, {
        approval: "on-write",
        resume: { state: stored },
        approvalDecisions: { "approval-1-2": { approve: true } },
      }),
    );
    expect(toolLog).toEqual(["read a.txt", "write a.txt=new"]);
    expect(resumed.outcome).toMatchObject({
      reason: "completed",
      response: "Wrote a.txt.",
      passes: 2,
    });
    const toolIds = resumed.outcome.messages
      .filter((message) => message.role === "tool")
      .map((message) => message.toolCallId);
    expect(toolIds).toEqual(["r1", "w1"]);
  });

  it("resumes from the checkpoint saved while waiting: asks again with the same id, then continues", async () => {
    model.enqueue(readThenWrite);
    const checkpoints: TurnState[] = [];
    const controller = new AbortController();
    const events: AgentEvent[] = [];
    const first = runTurn(baseInput(model, { approval: "on-write" }), {
      tunables: fastTunables,
      signal: controller.signal,
      onCheckpoint: (state) => {
        checkpoints.push(JSON.parse(JSON.stringify(state)) as TurnState);
      },
      onApproval: (request, context) => {
        // The drone restarts while the user is thinking.
        setTimeout(() => controller.abort(), 5);
        return new ApprovalChannel().handler(request, context);
      },
    });
    for (let step = await first.next(); !step.done; step = await first.next())
      events.push(step.value);
    expect(events.at(-1)).toEqual({
      type: "done",
      data: { reason: "cancelled", passes: 1, totalCost: 0 },
    });
    const saved = checkpoints.at(-1);
    expect(saved?.pendingApprovals.map((request) => request.id)).toEqual(["approval-1-2"]);
    expect(saved?.pendingCalls.map((pending) => pending.call.id)).toEqual(["w1"]);

    model.enqueue({ text: "Done after restart." });
    const channel = new ApprovalChannel();
    const asked: string[] = [];
    const resumed = await collect(
      baseInput(model, { approval: "on-write", resume: { state: saved } }),
      {
        onApproval: (request, context) => {
          asked.push(request.id);
          channel.decide(request.id, { approve: true });
          return channel.handler(request, context);
        },
      },
    );
    expect(resumed.of("approval")).toEqual([
      {
        approvals: [
          expect.objectContaining({ id: "approval-1-2", callId: "w1", tool: "write_file" }),
        ],
      },
    ]);
    expect(asked).toEqual(["approval-1-2"]);
    expect(toolLog).toEqual(["read a.txt", "write a.txt=new"]);
    expect(resumed.outcome.reason).toBe("completed");
    // The read ran once, before the restart; the resumed turn's request shows both results.
    const results = model.chatRequests
      .at(-1)
      ?.messages.filter((message) => message.role === "tool");
    expect(results?.map((message) => [message.tool_call_id, message.content])).toEqual([
      ["r1", "contents of a.txt"],
      ["w1", "wrote a.txt"],
    ]);
  });

  it("delivers a decision that arrives before the engine asks", async () => {
    model.enqueue(readThenWrite, { text: "ok" });
    const channel = new ApprovalChannel();
    expect(channel.decide("approval-1-2", { approve: false })).toBe(false);
    const generator = runTurn(baseInput(model, { approval: "on-write" }), {
      tunables: fastTunables,
      onApproval: channel.handler,
    });
    const events: AgentEvent[] = [];
    let step = await generator.next();
    while (!step.done) {
      events.push(step.value);
      step = await generator.next();
    }
    const run = wrap(events, step.value);
    expect(run.outcome.reason).toBe("completed");
    expect(toolLog).toEqual(["read a.txt"]);
    expect(channel.pending()).toEqual([]);
  });
});

describe("standing approvals (always allow a command)", () => {
  const commandsRun: string[] = [];
  const commandTool = defineTool({
    name: "run_command",
    description: "Runs a command.",
    permission: "write",
    inputSchema: z.object({ command: z.string() }),
    standingApproval: (input) => input.command,
    async execute({ command }) {
      commandsRun.push(command);
      return { ok: true, output: "ok", summary: `ran ${command}` };
    },
  });
  const calls = (...commands: string[]) => ({
    toolCalls: commands.map((command, index) => ({
      id: `c${index + 1}`,
      name: "run_command",
      arguments: { command },
    })),
  });

  beforeEach(() => {
    commandsRun.length = 0;
  });

  it("runs an allowed command without asking and still asks for any other", async () => {
    model.enqueue(calls("node test.js", "node test.js --watch"), { text: "done" });
    const asked: string[] = [];
    const run = await collect(
      baseInput(model, {
        approval: "on-write",
        allowedCommands: ["node test.js"],
        tools: [commandTool],
      }),
      {
        onApproval: async (request) => {
          asked.push(String((request.params as { command: string }).command));
          return { approve: true };
        },
      },
    );
    expect(asked).toEqual(["node test.js --watch"]);
    expect(run.of("approval")).toMatchObject([{ approvals: [{ callId: "c2" }] }]);
    expect(commandsRun).toEqual(["node test.js", "node test.js --watch"]);
  });

  it("stops asking for a command approved with alwaysAllow, for the rest of the turn", async () => {
    model.enqueue(calls("npm test"), calls("npm test", "npm run lint"), { text: "done" });
    const asked: string[] = [];
    await collect(baseInput(model, { approval: "on-write", tools: [commandTool] }), {
      onApproval: async (request) => {
        const command = String((request.params as { command: string }).command);
        asked.push(command);
        return { approve: true, alwaysAllow: command === "npm test" };
      },
    });
    expect(asked).toEqual(["npm test", "npm run lint"]);
    expect(commandsRun).toEqual(["npm test", "npm test", "npm run lint"]);
  });
});
