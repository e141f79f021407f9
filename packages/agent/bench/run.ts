// Engine overhead per pass with an in-process model that answers at once and no-op tools,
// against a bare hand-written loop over the same model; and heap growth over 10,000 passes.
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { median, percentile } from "@gadget/testkit/measure";
import { z } from "zod";
import type { ChatChunk, ChatMessageParam, ChatModel } from "../src/chat-model.ts";
import { runTurn } from "../src/run-turn.ts";
import { type AnyTool, defineTool } from "../src/tool.ts";

setFlagsFromString("--expose-gc");
const collectGarbage = runInNewContext("gc") as () => void;

/** Heap in use after two full collections (one can leave freshly unreachable objects behind). */
function settledHeap(): number {
  collectGarbage();
  collectGarbage();
  return process.memoryUsage().heapUsed;
}

const usage = { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 };

function chunk(delta: Record<string, unknown>, finish: string | null): ChatChunk {
  return {
    id: "bench",
    object: "chat.completion.chunk",
    created: 0,
    model: "bench",
    choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
  } as ChatChunk;
}

const usageChunk = {
  id: "bench",
  object: "chat.completion.chunk",
  created: 0,
  model: "bench",
  choices: [],
  usage,
} as ChatChunk;

const summary =
  "## Goal\nbench\n## Discoveries\nnone\n## Accomplished\nmany no-op calls\n## Files\nnone";

/** A model that asks for `callsPerPass` new no-op calls on each of `passes` passes, then answers. */
function instantModel(callsPerPass: number, passes: number): ChatModel {
  let pass = 0;
  return {
    async *stream(request) {
      if (!request.tools || request.tools.length === 0) {
        yield chunk({ role: "assistant", content: summary }, "stop");
        yield usageChunk;
        return;
      }
      pass += 1;
      if (pass > passes) {
        yield chunk({ role: "assistant", content: "done" }, "stop");
        yield usageChunk;
        return;
      }
      const toolCalls = Array.from({ length: callsPerPass }, (_, index) => ({
        index,
        id: `call-${pass}-${index}`,
        type: "function",
        function: { name: "noop", arguments: `{"pass":${pass},"index":${index}}` },
      }));
      yield chunk({ role: "assistant", content: "", tool_calls: toolCalls }, "tool_calls");
      yield usageChunk;
    },
  };
}

const noop: AnyTool = defineTool({
  name: "noop",
  description: "Does nothing.",
  permission: "read",
  inputSchema: z.object({ pass: z.number(), index: z.number() }),
  async execute() {
    return { ok: true, output: "ok", summary: "ok" };
  },
});

const provider = { baseUrl: "http://in-process.invalid/v1", apiKey: "none", modelId: "bench" };

interface EngineRun {
  perPass: number[];
  heapAt: Map<number, number>;
}

/** Runs one turn; records each pass's duration and the heap (after GC) at the given passes. */
async function runEngine(
  callsPerPass: number,
  passes: number,
  heapPoints: number[] = [],
): Promise<EngineRun> {
  const perPass: number[] = [];
  const heapAt = new Map<number, number>();
  const turn = runTurn(
    {
      goal: "benchmark",
      provider: { ...provider, contextWindow: 16_000 },
      workspace: "/tmp",
      tools: [noop],
    },
    { model: instantModel(callsPerPass, passes) },
  );
  let started = 0;
  let pass = 0;
  for await (const event of turn) {
    if (event.type !== "status" || event.data.phase !== "model") continue;
    const now = performance.now();
    if (pass > 0) perPass.push(now - started);
    if (heapPoints.includes(pass)) heapAt.set(pass, settledHeap());
    pass += 1;
    started = performance.now();
  }
  return { perPass, heapAt };
}

/** The same work without the engine: stream, assemble calls, parse, run tools, append messages. */
async function runBareLoop(callsPerPass: number, passes: number): Promise<number[]> {
  const model = instantModel(callsPerPass, passes);
  const messages: ChatMessageParam[] = [{ role: "user", content: "benchmark" }];
  const tools = [{ type: "function" as const, function: { name: "noop", parameters: {} } }];
  const perPass: number[] = [];
  const signal = new AbortController().signal;
  while (true) {
    const started = performance.now();
    const calls: Array<{ id: string; name: string; arguments: string }> = [];
    for await (const part of model.stream({ model: "bench", messages, tools }, { signal })) {
      for (const call of part.choices[0]?.delta.tool_calls ?? []) {
        calls[call.index] = {
          id: call.id ?? "",
          name: call.function?.name ?? "",
          arguments: call.function?.arguments ?? "",
        };
      }
    }
    if (calls.length === 0) break;
    messages.push({
      role: "assistant",
      content: null,
      tool_calls: calls.map((call) => ({
        id: call.id,
        type: "function",
        function: { name: call.name, arguments: call.arguments },
      })),
    });
    const results = await Promise.all(
      calls.map((call) =>
        noop.execute(noop.inputSchema.parse(JSON.parse(call.arguments)), {} as never),
      ),
    );
    for (const [index, result] of results.entries())
      messages.push({ role: "tool", tool_call_id: calls[index]?.id ?? "", content: result.output });
    // Keep the bare loop's memory bounded like the engine's, without any compaction logic.
    if (messages.length > 400) messages.splice(1, messages.length - 200);
    perPass.push(performance.now() - started);
  }
  return perPass;
}

/** Drops the first tenth (JIT warm-up). */
function steady(values: number[]): number[] {
  return values.slice(Math.floor(values.length / 10));
}

const format = (value: number, digits = 3) => value.toFixed(digits);
const megabytes = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

async function main() {
  console.log("# @gadget/agent benchmark\n");
  console.log(
    "In-process model answering at once, no-op read tools, compaction on (16k-token window).\n",
  );
  console.log(
    "| tool calls / pass | passes | engine median ms/pass | engine p95 ms/pass | bare loop median ms/pass | engine − bare (ms) | ratio |",
  );
  console.log("|---:|---:|---:|---:|---:|---:|---:|");
  const results: Record<number, number> = {};
  for (const [calls, passes] of [
    [1, 3_000],
    [10, 2_000],
    [50, 600],
  ] as const) {
    await runEngine(calls, 200); // warm-up
    await runBareLoop(calls, 200);
    const engine = steady((await runEngine(calls, passes)).perPass);
    const bare = steady(await runBareLoop(calls, passes));
    const engineMedian = median(engine);
    const bareMedian = median(bare);
    results[calls] = engineMedian;
    console.log(
      `| ${calls} | ${passes} | ${format(engineMedian)} | ${format(percentile(engine, 95))} | ${format(bareMedian)} | ${format(engineMedian - bareMedian)} | ${format(engineMedian / bareMedian, 1)}× |`,
    );
  }

  const before = settledHeap();
  const points = Array.from({ length: 10 }, (_, index) => (index + 1) * 1_000);
  const { heapAt } = await runEngine(10, 10_000, points);
  const at1k = heapAt.get(1_000) ?? Number.NaN;
  const at10k = heapAt.get(10_000) ?? Number.NaN;
  console.log(
    "\n| heap (after GC), 10 calls/pass, compaction on | heap used | growth over the heap before the turn |",
  );
  console.log("|---|---:|---:|");
  console.log(`| before the turn | ${megabytes(before)} | |`);
  console.log(`| after 1,000 passes | ${megabytes(at1k)} | ${megabytes(at1k - before)} |`);
  console.log(`| after 10,000 passes | ${megabytes(at10k)} | ${megabytes(at10k - before)} |`);
  console.log(`| 10,000 / 1,000 | ${format(at10k / at1k, 2)}× | |`);
  console.log(
    `\nGrowth every 1,000 passes (it rises and falls with the compaction cycle): ${points
      .map((point) => megabytes((heapAt.get(point) ?? Number.NaN) - before))
      .join(", ")}`,
  );

  const passTarget = (results[10] ?? Number.POSITIVE_INFINITY) < 1;
  const heapTarget = at10k / at1k <= 1.2;
  console.log(
    `\nTargets: median < 1 ms/pass at 10 calls: ${passTarget ? "met" : "NOT met"}; heap at 10,000 passes ≤ 1.2× heap at 1,000: ${heapTarget ? "met" : "NOT met"}.`,
  );
}

await main();
