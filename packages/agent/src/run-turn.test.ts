// The loop against a real HTTP model (the scripted server): passes, tools, events, prompts.
import { type ScriptedModel, startScriptedModel } from "@gadget/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import {
  baseInput,
  collect,
  gatedTool,
  readTool,
  toolLog,
  writeTool,
} from "./__fixtures__/turn.ts";
import { parseTurnState } from "./state.ts";
import { defineTool } from "./tool.ts";

let model: ScriptedModel;
beforeEach(async () => {
  model = await startScriptedModel();
  toolLog.length = 0;
});
afterEach(async () => {
  await model.close();
});

describe("runTurn", () => {
  it("answers in one pass when the model calls no tools, streaming tokens", async () => {
    model.enqueue({ text: "The project is a small CLI.", chunkSize: 5 });
    const run = await collect(
      baseInput(model, {
        history: [
          { role: "user", content: "earlier question", createdAt: new Date() },
          {
            role: "assistant",
            content: "<thinking>secret plan</thinking>\nearlier answer",
            createdAt: new Date(),
          },
        ],
        provider: {
          baseUrl: model.baseUrl,
          apiKey: "test-key",
          modelId: "model-a",
          params: { temperature: 0.3, topP: 0.9, topK: 40 },
        },
      }),
    );
    expect(
      run
        .of("token")
        .map((data) => data.text)
        .join(""),
    ).toBe("The project is a small CLI.");
    expect(run.of("token").length).toBeGreaterThan(1);
    expect(run.of("response")).toEqual([{ message: "The project is a small CLI." }]);
    expect(run.of("done")).toEqual([{ reason: "completed", passes: 1, totalCost: 0 }]);
    expect(run.types().at(-1)).toBe("done");
    expect(run.outcome.reason).toBe("completed");
    expect(run.outcome.messages.map((message) => message.role)).toEqual(["user", "assistant"]);

    const request = model.chatRequests[0];
    expect(request).toMatchObject({
      model: "model-a",
      temperature: 0.3,
      top_p: 0.9,
      top_k: 40,
      stream: true,
    });
    expect(request?.stream_options).toEqual({ include_usage: true });
    const [system, ...rest] = request?.messages ?? [];
    expect(system?.role).toBe("system");
    expect(system?.content).toContain("/tmp/gadget-test-workspace");
    expect(system?.content).toContain("read_file");
    expect(rest.map((message) => message.content)).toEqual([
      "earlier question",
      "earlier answer",
      "Summarise the project",
      expect.stringContaining("## CURRENT STATE (pass 1)"),
    ]);
    expect(request?.tools?.map((tool) => tool.function.name)).toEqual([
      "read_file",
      "write_file",
      "run_command",
    ]);
  });

  it("runs the tools the model asks for and feeds the results back until it answers", async () => {
    model.enqueue(
      { toolCalls: [{ id: "c1", name: "read_file", arguments: { path: "README.md" } }] },
      { text: "It is a CLI." },
    );
    const run = await collect(baseInput(model));
    expect(run.outcome.reason).toBe("completed");
    expect(run.of("tool_start")).toEqual([
      { callId: "c1", tool: "read_file", params: { path: "README.md" } },
    ]);
    expect(run.of("tool_result")).toEqual([
      {
        callId: "c1",
        tool: "read_file",
        ok: true,
        summary: "read README.md",
        durationMs: expect.any(Number),
      },
    ]);
    const second = model.chatRequests[1]?.messages ?? [];
    const assistant = second.find((message) => message.role === "assistant");
    expect(assistant?.tool_calls).toEqual([
      {
        id: "c1",
        type: "function",
        function: { name: "read_file", arguments: '{"path":"README.md"}' },
      },
    ]);
    expect(second.find((message) => message.role === "tool")).toMatchObject({
      tool_call_id: "c1",
      content: "contents of README.md",
    });
    expect(second.at(-1)?.content).toContain("## CURRENT STATE (pass 2)");
    expect(run.outcome.messages.map((message) => message.role)).toEqual([
      "user",
      "assistant",
      "tool",
      "assistant",
    ]);
    // The current-state block is sent, never stored.
    expect(run.outcome.messages.some((message) => message.content.includes("CURRENT STATE"))).toBe(
      false,
    );
  });

  it("runs read calls of one response in parallel and appends results in call order", async () => {
    const gated = gatedTool();
    const finishOrder: string[] = [];
    // Each call waits for the gate; the gate opens only once all three have started, so a
    // sequential engine would never get past the first (it would time out instead).
    const latch = defineTool({
      name: "slow_read",
      description: "Waits for its siblings.",
      permission: "read",
      inputSchema: z.object({ id: z.string() }),
      async execute(input, context) {
        if (input.id === "c") setTimeout(() => gated.release(), 0);
        const result = await gated.tool.execute(input, context);
        finishOrder.push(input.id);
        return result;
      },
    });
    model.enqueue(
      {
        interleaveToolCalls: true,
        toolCalls: [
          { id: "a", name: "slow_read", arguments: { id: "a" } },
          { id: "b", name: "slow_read", arguments: { id: "b" } },
          { id: "c", name: "slow_read", arguments: { id: "c" } },
        ],
      },
      { text: "done" },
    );
    const run = await collect(baseInput(model, { tools: [latch] }));
    expect(gated.started).toEqual(["a", "b", "c"]);
    expect(run.of("tool_result").every((data) => data.ok)).toBe(true);
    const toolMessages = (model.chatRequests[1]?.messages ?? []).filter(
      (message) => message.role === "tool",
    );
    expect(toolMessages.map((message) => [message.tool_call_id, message.content])).toEqual([
      ["a", "done a"],
      ["b", "done b"],
      ["c", "done c"],
    ]);
  });

  it("runs write calls one after another in the model's order", async () => {
    model.enqueue(
      {
        toolCalls: [
          { name: "write_file", arguments: { path: "a.txt", content: "1" } },
          { name: "read_file", arguments: { path: "a.txt" } },
          { name: "write_file", arguments: { path: "b.txt", content: "2" } },
        ],
      },
      { text: "written" },
    );
    const run = await collect(baseInput(model));
    expect(toolLog).toEqual(["write a.txt=1", "read a.txt", "write b.txt=2"]);
    expect(
      run.outcome.messages
        .filter((message) => message.role === "tool")
        .map((message) => message.content),
    ).toEqual(["wrote a.txt", "contents of a.txt", "wrote b.txt"]);
  });

  it("streams reasoning as thinking events and stores it in the history's <thinking> form, not sending it back", async () => {
    model.enqueue(
      {
        reasoning: "I should read the README first.",
        text: "Reading.",
        toolCalls: [{ id: "c1", name: "read_file", arguments: { path: "README.md" } }],
      },
      { reasoning: "Now I know.", reasoningField: "reasoning", text: "Done." },
    );
    const run = await collect(baseInput(model));
    expect(
      run
        .of("thinking")
        .map((data) => data.text)
        .join(""),
    ).toBe("I should read the README first.Now I know.");
    const assistants = run.outcome.messages.filter((message) => message.role === "assistant");
    expect(assistants.map((message) => message.content)).toEqual([
      "<thinking>I should read the README first.</thinking>\nReading.",
      "<thinking>Now I know.</thinking>\nDone.",
    ]);
    expect(run.outcome.response).toBe("Done.");
    const replayed = model.chatRequests[1]?.messages.find(
      (message) => message.role === "assistant",
    );
    expect(replayed?.content).toBe("Reading.");
    expect(replayed?.reasoning_content).toBeUndefined();
  });

  it("sums usage and cost exactly as the server reported them", async () => {
    model.enqueue(
      {
        toolCalls: [{ name: "read_file", arguments: { path: "a" } }],
        usage: {
          promptTokens: 1000,
          completionTokens: 200,
          reasoningTokens: 50,
          cachedTokens: 400,
        },
      },
      {
        text: "ok",
        usage: {
          promptTokens: 1500,
          completionTokens: 100,
          reasoningTokens: 0,
          cachedTokens: 1000,
        },
      },
    );
    const run = await collect(
      baseInput(model, {
        provider: {
          baseUrl: model.baseUrl,
          apiKey: "k",
          modelId: "model-a",
          pricing: { inputPerMTok: 2, outputPerMTok: 10, cachedInputPerMTok: 0.5 },
        },
      }),
    );
    const expectedCost = ((600 + 500) * 2 + (400 + 1000) * 0.5 + (200 + 100) * 10) / 1_000_000;
    const last = run.of("cost_update").at(-1);
    expect(last?.tokens).toEqual({ input: 2500, output: 300, reasoning: 50, cached: 1400 });
    expect(last?.totalCost).toBeCloseTo(expectedCost, 12);
    expect(last?.priced).toBe(true);
    expect(run.outcome.usage).toEqual({ input: 2500, output: 300, reasoning: 50, cached: 1400 });
    expect(run.of("done")[0]?.totalCost).toBeCloseTo(expectedCost, 12);
  });

  it("turns malformed arguments, unknown tools, schema violations, throws and timeouts into results the model reads", async () => {
    const hanging = defineTool({
      name: "hang",
      description: "Never finishes on its own.",
      permission: "read",
      timeoutMs: 50,
      inputSchema: z.object({}),
      execute: () => new Promise(() => undefined),
    });
    model.enqueue(
      {
        toolCalls: [
          { id: "bad-json", name: "read_file", arguments: '{"path": "README.md"' },
          { id: "unknown", name: "delete_everything", arguments: {} },
          { id: "schema", name: "read_file", arguments: { path: 42 } },
          { id: "throws", name: "run_command", arguments: { command: "crash" } },
          { id: "tool-error", name: "run_command", arguments: { command: "refuse" } },
          { id: "timeout", name: "hang", arguments: {} },
        ],
      },
      { text: "I see the errors." },
    );
    const run = await collect(baseInput(model, { tools: [...baseInput(model).tools!, hanging] }));
    expect(run.outcome.reason).toBe("completed");
    const results = Object.fromEntries(
      (model.chatRequests[1]?.messages ?? [])
        .filter((message) => message.role === "tool")
        .map((message) => [message.tool_call_id, message.content]),
    );
    expect(results["bad-json"]).toMatch(/not valid JSON/);
    expect(results.unknown).toMatch(/unknown tool "delete_everything".*read_file/);
    expect(results.schema).toMatch(/invalid arguments for read_file: path/);
    expect(results.throws).toMatch(/run_command failed: segmentation fault/);
    expect(results["tool-error"]).toBe("Error (refused): pipes are not allowed");
    expect(results.timeout).toMatch(/timed out after 50 ms/);
    expect(run.of("tool_result").map((data) => data.ok)).toEqual([
      false,
      false,
      false,
      false,
      false,
      false,
    ]);
  });

  it("streams tool output as tool_output events", async () => {
    const noisy = defineTool({
      name: "build",
      description: "Builds.",
      permission: "write",
      inputSchema: z.object({}),
      async execute(_input, context) {
        context.onOutput?.({ stream: "stdout", text: "compiling\n" });
        context.onOutput?.({ stream: "stderr", text: "warning: x\n" });
        return { ok: true, output: "built", summary: "built" };
      },
    });
    model.enqueue({ toolCalls: [{ id: "b", name: "build", arguments: {} }] }, { text: "built" });
    const run = await collect(baseInput(model, { tools: [noisy] }));
    expect(run.of("tool_output")).toEqual([
      { callId: "b", stream: "stdout", text: "compiling\n" },
      { callId: "b", stream: "stderr", text: "warning: x\n" },
    ]);
    const order = run.types().filter((type) => type.startsWith("tool_"));
    expect(order).toEqual(["tool_start", "tool_output", "tool_output", "tool_result"]);
  });

  it("keeps the living document and shows it in the current-state block", async () => {
    const updateDocument = defineTool({
      name: "update_document",
      description: "Updates the living document.",
      permission: "read",
      inputSchema: z.object({ sections: z.record(z.string(), z.string()) }),
      async execute({ sections }, context) {
        context.document.update(sections);
        return { ok: true, output: "updated", summary: "document updated" };
      },
    });
    model.enqueue(
      {
        toolCalls: [
          { name: "update_document", arguments: { sections: { plan: "read then fix" } } },
        ],
      },
      { text: "ok" },
    );
    const run = await collect(baseInput(model, { tools: [updateDocument] }));
    expect(run.of("document_update")).toEqual([{ sections: { plan: "[Pass 1] read then fix" } }]);
    expect(model.chatRequests[1]?.messages.at(-1)?.content).toContain("[Pass 1] read then fix");
    expect(model.chatRequests[0]?.messages[0]?.content).toContain("update_document");
  });

  it("offers only read tools in ask mode and explains a write call", async () => {
    model.enqueue(
      { toolCalls: [{ id: "w", name: "write_file", arguments: { path: "x", content: "y" } }] },
      { text: "I can only read." },
    );
    const run = await collect(baseInput(model, { mode: "ask" }));
    expect(model.chatRequests[0]?.tools?.map((tool) => tool.function.name)).toEqual(["read_file"]);
    expect(model.chatRequests[0]?.messages[0]?.content).toMatch(/You can only read/);
    expect(toolLog).toEqual([]);
    const result = model.chatRequests[1]?.messages.find((message) => message.role === "tool");
    expect(result?.content).toMatch(/write_file is not available in ask mode/);
    expect(run.outcome.reason).toBe("completed");
  });

  it("gives tester and docser turns their own role in the system prompt", async () => {
    model.setHandler(() => ({ text: "ok" }));
    await collect(baseInput(model, { mode: "tester" }));
    await collect(baseInput(model, { mode: "docser" }));
    expect(model.chatRequests[0]?.messages[0]?.content).toMatch(/You are the tester/);
    expect(model.chatRequests[1]?.messages[0]?.content).toMatch(/You are the documentation writer/);
  });

  it("pre-enriches once, in parallel, skipping sources that fail or time out", async () => {
    const loaded: string[] = [];
    model.enqueue({ toolCalls: [{ name: "read_file", arguments: { path: "a" } }] }, { text: "ok" });
    const run = await collect(
      baseInput(model, {
        contextSources: [
          { name: "repo tree", load: async () => "src/\n  index.ts" },
          { name: "README", load: async () => "# Demo project" },
          {
            name: "git status",
            load: ({ signal }) =>
              new Promise((_resolve, reject) => {
                loaded.push("git status started");
                signal.addEventListener("abort", () => reject(new Error("aborted")));
              }),
          },
          { name: "AGENTS.md", load: async () => null },
          {
            name: "broken",
            load: async () => {
              throw new Error("boom");
            },
          },
        ],
      }),
    );
    expect(loaded).toEqual(["git status started"]);
    expect(run.of("pre_enrichment")).toEqual([
      { message: "Gathering context…" },
      { message: "Pre-loaded 2 context sources", toolsRun: ["repo tree", "README"] },
    ]);
    expect(run.types().indexOf("pre_enrichment")).toBe(0);
    expect(model.chatRequests[0]?.messages[0]?.content).toContain("# Demo project");
    // Kept for the whole turn: the first message never changes, so a prompt cache keeps it.
    expect(model.chatRequests[1]?.messages[0]?.content).toBe(
      model.chatRequests[0]?.messages[0]?.content,
    );
    expect(run.outcome.reason).toBe("completed");
  });

  it("starts every request with the previous one minus its state block, so a prompt cache keeps it", async () => {
    const passes = 6;
    for (let pass = 1; pass < passes; pass++) {
      model.enqueue({ toolCalls: [{ name: "read_file", arguments: { path: `file-${pass}` } }] });
    }
    model.enqueue({ text: "done" });
    const run = await collect(
      baseInput(model, {
        contextSources: [{ name: "README", load: async () => "# Demo project" }],
      }),
    );
    expect(run.outcome.reason).toBe("completed");
    const requests = model.chatRequests.map((request) => request.messages);
    expect(requests).toHaveLength(passes);
    for (let index = 1; index < requests.length; index++) {
      const previous = requests[index - 1]!.slice(0, -1);
      expect(requests[index]!.slice(0, previous.length)).toEqual(previous);
    }
  });

  it("leaves nothing on the turn's signal per request: a 12-pass turn raises no listener warning", async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
    process.on("warning", onWarning);
    try {
      for (let pass = 1; pass < 12; pass++) {
        model.enqueue({ toolCalls: [{ name: "read_file", arguments: { path: `file-${pass}` } }] });
      }
      model.enqueue({ text: "done" });
      const run = await collect(baseInput(model), { signal: new AbortController().signal });
      expect(run.outcome.reason).toBe("completed");
      // Warnings are emitted on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off("warning", onWarning);
    }
    expect(warnings.filter((warning) => warning.startsWith("MaxListenersExceededWarning"))).toEqual(
      [],
    );
  });

  it("passes workspace and call id to tools, and exposes the write tool's approval description", async () => {
    const seen: Array<{ workspace: string; callId: string }> = [];
    const probe = defineTool({
      name: "probe",
      description: "Reports its context.",
      permission: "read",
      inputSchema: z.object({}),
      async execute(_input, context) {
        seen.push({ workspace: context.workspace, callId: context.callId });
        return { ok: true, output: "ok", summary: "ok" };
      },
    });
    model.enqueue({ toolCalls: [{ id: "p1", name: "probe", arguments: "" }] }, { text: "ok" });
    await collect(baseInput(model, { tools: [probe, readTool(), writeTool()] }));
    expect(seen).toEqual([{ workspace: "/tmp/gadget-test-workspace", callId: "p1" }]);
  });

  it("hands the host a serialisable checkpoint after every pass", async () => {
    model.enqueue(
      { toolCalls: [{ name: "read_file", arguments: { path: "a" } }] },
      { toolCalls: [{ name: "read_file", arguments: { path: "b" } }] },
      { text: "ok" },
    );
    const saved: string[] = [];
    await collect(baseInput(model), {
      onCheckpoint: (state) => void saved.push(JSON.stringify(state)),
    });
    const states = saved.map((text) => parseTurnState(JSON.parse(text)));
    expect(states.map((state) => state?.passCount)).toEqual([1, 2]);
    expect(states[1]?.messages.filter((message) => message.role === "tool")).toHaveLength(2);
  });

  it("estimates usage when the provider reports none", async () => {
    model.enqueue({ text: "a reply of some length", usage: null });
    const run = await collect(baseInput(model));
    const tokens = run.of("cost_update").at(-1)?.tokens as { input: number; output: number };
    expect(tokens.input).toBeGreaterThan(100);
    expect(tokens.output).toBe(Math.ceil("a reply of some length".length / 4));
  });
});
