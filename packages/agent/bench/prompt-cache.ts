// How much of each request a provider's prompt cache can reuse: over a 20-pass turn against the
// scripted server, the share of request n's prompt that is request n−1's prompt unchanged (the
// longest equal prefix of messages), beside the most any request could share — everything but
// the messages the previous pass added and the per-pass state block, which are new by nature.
// Prompt size is counted in characters of the messages as sent (tokens follow characters).

import { startScriptedModel } from "@gadget/testkit";
import { percentile } from "@gadget/testkit/measure";
import { z } from "zod";
import { runTurn } from "../src/run-turn.ts";
import { defineTool } from "../src/tool.ts";

const passes = 20;
/** A project README of a realistic size, loaded by pre-enrichment. */
const readme = `# Demo project\n\n${"A paragraph of the project's own documentation. ".repeat(160)}`;

type Message = Record<string, unknown>;
const size = (messages: Message[]) =>
  messages.reduce((total, message) => total + JSON.stringify(message).length, 0);

/** Messages at the start of `current` equal to those at the start of `previous`. */
function equalPrefix(previous: Message[], current: Message[]): number {
  let index = 0;
  while (
    index < previous.length &&
    index < current.length &&
    JSON.stringify(previous[index]) === JSON.stringify(current[index])
  ) {
    index++;
  }
  return index;
}

async function main(): Promise<void> {
  const model = await startScriptedModel();
  const readFile = defineTool({
    name: "read_file",
    description: "Reads a file of the workspace.",
    permission: "read",
    inputSchema: z.object({ path: z.string() }),
    async execute(input) {
      const output = `// ${input.path}\n${"export const value = 1;\n".repeat(80)}`;
      return { ok: true, output, summary: `read ${input.path}` };
    },
  });
  try {
    for (let pass = 1; pass < passes; pass++) {
      model.enqueue({
        text: `Reading the next file (${pass}).`,
        toolCalls: [{ name: "read_file", arguments: { path: `src/file-${pass}.ts` } }],
      });
    }
    model.enqueue({ text: "Every file read; the project is summarised above." });
    const turn = runTurn({
      goal: "Read every file of the project and summarise it",
      provider: { baseUrl: model.baseUrl, apiKey: "bench", modelId: "bench-model" },
      workspace: "/tmp/gadget-bench-workspace",
      tools: [readFile],
      contextSources: [{ name: "README", load: async () => readme }],
      limits: { maxPasses: passes + 5 },
    });
    let step = await turn.next();
    while (!step.done) step = await turn.next();
    if (step.value.reason !== "completed") throw new Error(`turn ended ${step.value.reason}`);

    const requests = model.chatRequests.map((request) => request.messages as Message[]);
    const rows: string[] = [];
    const shares: number[] = [];
    /** Of what the previous request could pass on, how much the next one kept. */
    const kept: number[] = [];
    for (let index = 1; index < requests.length; index++) {
      const previous = requests[index - 1]!;
      const current = requests[index]!;
      const shared = size(current.slice(0, equalPrefix(previous, current)));
      // At most: the previous request without its state block, which always comes last.
      const reusable = size(previous.slice(0, -1));
      const share = shared / size(current);
      shares.push(share);
      kept.push(shared / reusable);
      rows.push(
        `| ${index + 1} | ${size(current).toLocaleString("en")} | ${(share * 100).toFixed(1)}% | ${((reusable / size(current)) * 100).toFixed(1)}% | ${((shared / reusable) * 100).toFixed(1)}% |`,
      );
    }
    console.log(
      `\n## Prompt prefix kept between passes (${requests.length} requests, one turn, scripted server)\n`,
    );
    console.log(
      "| pass | prompt (characters) | equal to the previous request | at most (all but what the last pass added) | kept of that |",
    );
    console.log("|---|---|---|---|---|");
    for (const row of rows) console.log(row);
    // What the last request has that the one before could not pass on, by kind of message.
    const last = requests.at(-1)!;
    const added = last.slice(equalPrefix(requests.at(-2)!, last));
    const addedBy = (role: string) =>
      size(added.slice(0, -1).filter((message) => message.role === role));
    const firstAtTarget = shares.findIndex((_share, index) =>
      shares.slice(index).every((later) => later >= 0.95),
    );
    console.log(
      `\nNew in the last request (${size(added).toLocaleString("en")} characters): the model's answer ${addedBy("assistant").toLocaleString("en")}, its tool results ${addedBy("tool").toLocaleString("en")}, the state block ${size(added.slice(-1)).toLocaleString("en")}. Every prompt from pass ${firstAtTarget >= 0 ? firstAtTarget + 2 : "—"} on is ≥ 95% the previous one.`,
    );
    console.log(
      `\nFrom pass 2 on: lowest ${(Math.min(...shares) * 100).toFixed(1)}%, median ${(percentile(shares, 50) * 100).toFixed(1)}% of each prompt (target ≥ 95%); of what could be kept, lowest ${(Math.min(...kept) * 100).toFixed(1)}%. The rest is what the previous pass added (its answer and tool results) and the state block.`,
    );
  } finally {
    await model.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
