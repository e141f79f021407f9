// Stream reader throughput: recorded provider streams, their chunks repeated to a few MB, read
// by StreamReader (JSON.parse of each chunk, then the reader) against JSON.parse of the same
// chunks alone, measured in the same run. The difference is what the reader itself costs.
import { readFileSync } from "node:fs";
import path from "node:path";
import { median } from "@gadget/testkit/measure";
import type { ChatChunk } from "../src/chat-model.ts";
import { StreamReader } from "../src/stream-reader.ts";

const fixtures = path.join(import.meta.dirname, "..", "src", "__fixtures__", "providers");
/** Streams with thinking, tool calls and provider fields, so every path of the reader runs. */
const recordings = [
  "openrouter/anthropic-thinking-tool-call.sse",
  "vllm/qwen3-think-tool-call.sse",
  "mistral/thinking-content-array.sse",
];
const targetBytes = 4 * 1024 * 1024;
const runs = 15;
const warmUps = 3;

/** The `data:` payloads of a recorded SSE body, comments and `[DONE]` left out. */
function payloads(file: string): string[] {
  const body = readFileSync(path.join(fixtures, file), "utf8");
  return body
    .split(/\r?\n/)
    .filter((line) => line.startsWith("data:"))
    .map((line) => line.slice(5).trim())
    .filter((data) => data !== "[DONE]");
}

/** The recording's chunks repeated until they add up to `targetBytes`. */
function repeated(chunks: string[]): { chunks: string[]; bytes: number } {
  const once = chunks.reduce((sum, chunk) => sum + Buffer.byteLength(chunk), 0);
  const times = Math.ceil(targetBytes / once);
  return { chunks: Array.from({ length: times }, () => chunks).flat(), bytes: once * times };
}

function parseOnly(chunks: string[]): number {
  let choices = 0;
  for (const chunk of chunks) choices += (JSON.parse(chunk) as ChatChunk).choices?.length ?? 0;
  return choices;
}

function parseAndRead(chunks: string[]): number {
  const reader = new StreamReader({ callIdPrefix: "bench" });
  let pieces = 0;
  for (const chunk of chunks) pieces += reader.read(JSON.parse(chunk) as ChatChunk).length;
  return pieces + reader.finish().reading.toolCalls.length;
}

/** Median milliseconds of `work` over the runs after the warm-ups. */
function measure(work: () => number): number {
  const times: number[] = [];
  let sink = 0;
  for (let run = 0; run < warmUps + runs; run++) {
    const started = performance.now();
    sink += work();
    if (run >= warmUps) times.push(performance.now() - started);
  }
  if (sink < 0) console.log(sink); // keeps the work from being optimised away
  return median(times);
}

const megabytesPerSecond = (bytes: number, ms: number) => bytes / 1024 / 1024 / (ms / 1000);

function main(): void {
  console.log("\n## Stream reader throughput (recorded streams repeated to 4 MB, one process)\n");
  console.log(
    "| recording | chunks | MB | JSON.parse alone (ms) | parse + reader (ms) | reader's own cost | parse + reader (MB/s) | chunks/s |",
  );
  console.log("|---|---:|---:|---:|---:|---:|---:|---:|");
  for (const file of recordings) {
    const { chunks, bytes } = repeated(payloads(file));
    const baseline = measure(() => parseOnly(chunks));
    const reading = measure(() => parseAndRead(chunks));
    const share = ((reading - baseline) / baseline) * 100;
    console.log(
      `| ${file} | ${chunks.length.toLocaleString("en")} | ${(bytes / 1024 / 1024).toFixed(1)} | ${baseline.toFixed(1)} | ${reading.toFixed(1)} | +${(reading - baseline).toFixed(1)} ms (${share.toFixed(0)}% of parsing) | ${megabytesPerSecond(bytes, reading).toFixed(0)} | ${Math.round(chunks.length / (reading / 1000)).toLocaleString("en")} |`,
    );
  }
  console.log(
    `\nMedian of ${runs} runs after ${warmUps} warm-ups. A real stream also pays for the SDK's SSE parsing and the network, which this leaves out.`,
  );
}

main();
