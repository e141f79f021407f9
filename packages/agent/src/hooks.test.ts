// Hooks in the loop, with an in-process host standing in for the drone's sandboxed runner: what the
// model reads when a PreToolUse hook blocks, a rewrite that is what gets approved and run, context
// added after a call, a Stop hook keeping the loop going (at most 3 times) and SessionStart context.
import type { HookEventData, HookEventName } from "@gadget/protocol";
import { type ScriptedModel, startScriptedModel } from "@gadget/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { baseInput, collect, toolLog } from "./__fixtures__/turn.ts";
import { ApprovalChannel } from "./approvals.ts";
import type { HookInvocation, HookVerdict, TurnHooks } from "./hook-host.ts";

let model: ScriptedModel;
beforeEach(async () => {
  model = await startScriptedModel();
  toolLog.length = 0;
});
afterEach(async () => {
  await model.close();
});

type Answer = Omit<HookVerdict, "runs"> & { outcome?: HookEventData["outcome"] };

/** Hooks answered by `answer`; each invocation is recorded and reported as one run. */
function hostHooks(
  events: HookEventName[],
  answer: (invocation: HookInvocation) => Answer,
): TurnHooks & { invocations: HookInvocation[] } {
  const invocations: HookInvocation[] = [];
  return {
    invocations,
    has: (event) => events.includes(event),
    async run(invocation) {
      invocations.push(invocation);
      const verdict = answer(invocation);
      return {
        ...verdict,
        runs: [
          {
            event: invocation.event,
            command: "node hook.mjs",
            ok: verdict.outcome !== "failed",
            outcome: verdict.outcome ?? (verdict.blocked ? "blocked" : "continue"),
            ms: 3,
            output: verdict.blocked ?? "",
            ...(invocation.callId ? { callId: invocation.callId } : {}),
            ...(invocation.tool ? { tool: invocation.tool } : {}),
          },
        ],
      };
    },
  };
}

const lastToolMessage = (index: number) =>
  model.chatRequests[index]?.messages.filter((message) => message.role === "tool").at(-1)?.content;

describe("hooks in the loop", () => {
  it("a PreToolUse hook that blocks: the call does not run and the model reads why", async () => {
    model.enqueue(
      { toolCalls: [{ id: "c1", name: "run_command", arguments: { command: "rm -rf build" } }] },
      { text: "I will not delete it." },
    );
    const hooks = hostHooks(["PreToolUse"], (invocation) => {
      const command = (invocation.params as { command: string }).command;
      return command.startsWith("rm ") ? { blocked: "rm is not allowed; use git clean" } : {};
    });
    const run = await collect(baseInput(model), { hooks });
    expect(toolLog).toEqual([]);
    expect(run.of("hook")).toMatchObject([
      { event: "PreToolUse", outcome: "blocked", callId: "c1", tool: "run_command" },
    ]);
    expect(run.of("tool_result")).toMatchObject([
      { callId: "c1", ok: false, summary: "blocked by a project hook" },
    ]);
    expect(lastToolMessage(1)).toBe(
      "Error: a project hook blocked this call: rm is not allowed; use git clean",
    );
    const types = run.types();
    expect(types.indexOf("hook")).toBeLessThan(types.indexOf("tool_start"));
  });

  it("a rewrite is what is approved and what runs", async () => {
    model.enqueue(
      {
        toolCalls: [
          { id: "w1", name: "write_file", arguments: { path: "notes.txt", content: "hi" } },
        ],
      },
      { text: "Written." },
    );
    const hooks = hostHooks(["PreToolUse"], (invocation) => {
      const params = invocation.params as { path: string; content: string };
      return { params: { ...params, path: `docs/${params.path}` }, outcome: "rewrote" };
    });
    const approvals = new ApprovalChannel();
    const asked: unknown[] = [];
    const run = await collect(baseInput(model, { approval: "on-write" }), {
      hooks,
      onApproval: async (request, context) => {
        asked.push(request.params);
        setTimeout(() => approvals.decide(request.id, { approve: true }), 5);
        return approvals.handler(request, context);
      },
    });
    expect(asked).toEqual([{ path: "docs/notes.txt", content: "hi" }]);
    expect(run.of("approval")[0]).toMatchObject({
      approvals: [
        { params: { path: "docs/notes.txt" }, description: "Write docs/notes.txt (2 characters)" },
      ],
    });
    expect(toolLog).toEqual(["write docs/notes.txt=hi"]);
    expect(run.of("tool_start")).toMatchObject([{ params: { path: "docs/notes.txt" } }]);
  });

  it("a rewrite the tool refuses fails the call with the tool's reasons", async () => {
    model.enqueue(
      { toolCalls: [{ id: "r1", name: "read_file", arguments: { path: "a.txt" } }] },
      { text: "ok" },
    );
    const hooks = hostHooks(["PreToolUse"], () => ({ params: { file: 3 } }));
    const run = await collect(baseInput(model), { hooks });
    expect(toolLog).toEqual([]);
    expect(lastToolMessage(1)).toContain("invalid arguments for read_file: path");
    expect(run.outcome.reason).toBe("completed");
  });

  it("PostToolUse context reaches the model with the tool's output", async () => {
    model.enqueue(
      { toolCalls: [{ id: "r1", name: "read_file", arguments: { path: "a.txt" } }] },
      { text: "ok" },
    );
    const hooks = hostHooks(["PostToolUse"], (invocation) => {
      expect(invocation.result).toMatchObject({ ok: true, output: "contents of a.txt" });
      return { context: "a.txt is generated; edit a.src instead", outcome: "context" };
    });
    const run = await collect(baseInput(model), { hooks });
    expect(lastToolMessage(1)).toBe(
      "contents of a.txt\n\n[Project hook]\na.txt is generated; edit a.src instead",
    );
    const types = run.types();
    expect(types.indexOf("hook")).toBeGreaterThan(types.indexOf("tool_result"));
  });

  it("a Stop hook keeps the loop going with its reason, at most 3 times a turn", async () => {
    model.enqueue({ text: "Done 1" }, { text: "Done 2" }, { text: "Done 3" }, { text: "Done 4" });
    const hooks = hostHooks(["Stop"], () => ({ blocked: "2 tests fail" }));
    const run = await collect(baseInput(model), { hooks });
    expect(hooks.invocations.map((invocation) => invocation.response)).toEqual([
      "Done 1",
      "Done 2",
      "Done 3",
    ]);
    expect(model.chatRequests).toHaveLength(4);
    const said = model.chatRequests[1]?.messages.map((message) => message.content) ?? [];
    expect(said.join("\n")).toContain("not finished yet; go on:\n2 tests fail");
    expect(run.of("response")).toEqual([{ message: "Done 4" }]);
    expect(run.outcome.state.stopHookContinuations).toBe(3);
    expect(run.of("status").some((status) => String(status.message).includes("3 times"))).toBe(
      true,
    );
  });

  it("SessionStart context is in the first request of a session's first turn only", async () => {
    model.enqueue({ text: "hello" }, { text: "again" });
    const hooks = hostHooks(["SessionStart"], () => ({
      context: "Use pnpm, never npm.",
      outcome: "context",
    }));
    await collect(baseInput(model), { hooks });
    expect(model.chatRequests[0]?.messages[0]?.content).toContain("Use pnpm, never npm.");
    await collect(
      baseInput(model, { history: [{ role: "user", content: "before", createdAt: new Date() }] }),
      { hooks },
    );
    expect(hooks.invocations).toHaveLength(1);
  });
});
