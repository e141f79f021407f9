// Benchmark of the tools on a generated 20,000-file (~200 MB) repository, against raw baselines
// measured in the same run (ripgrep itself, plain fs calls, git status). Prints a markdown table.
import { execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { AnyTool, ToolContext } from "@gadget/agent";
import { median } from "@gadget/testkit/measure";
import { changesSince, createTools, snapshotWorkspace } from "../src/index.ts";

const fileCount = 20_000;
const directories = 200;
const targetBytesPerFile = 10_000;
const rarePattern = "GADGET_RARE_TOKEN_7f3a";
const commonPattern = "return";
const repository = path.join(os.tmpdir(), "gadget-tools-bench-repo-v2");
const marker = path.join(repository, ".git", "gadget-bench-complete");
const runs = 5;

/** A small deterministic generator, so every run benchmarks the same repository. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

function git(...args: string[]): string {
  return execFileSync(
    "git",
    [
      "-c",
      "user.name=Bench",
      "-c",
      "user.email=bench@example.com",
      "-c",
      "core.looseCompression=0",
      ...args,
    ],
    { cwd: repository, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
  );
}

async function generate(): Promise<void> {
  if (existsSync(marker)) return;
  const started = Date.now();
  console.error(`generating ${fileCount} files in ${repository} …`);
  const next = random(42);
  const words = [
    "const",
    "value",
    "items",
    "load",
    "config",
    "user",
    "result",
    "map",
    "filter",
    "index",
    "state",
  ];
  const pool = Array.from({ length: 4_000 }, (_, index) => {
    const a = words[Math.floor(next() * words.length)];
    const b = words[Math.floor(next() * words.length)];
    return index % 7 === 0
      ? `  return ${a}.${b}(${index});`
      : `  const ${a}${index} = ${b}(${Math.floor(next() * 1e6)}); // ${a} ${b} ${index}`;
  });
  for (let directory = 0; directory < directories; directory++) {
    const folder = path.join(repository, "src", `module-${String(directory).padStart(3, "0")}`);
    await mkdir(folder, { recursive: true });
    const writes: Promise<void>[] = [];
    for (let file = 0; file < fileCount / directories; file++) {
      const lines: string[] = [`export function f${directory}_${file}() {`];
      let size = 0;
      while (size < targetBytesPerFile) {
        const line = pool[Math.floor(next() * pool.length)] as string;
        lines.push(line);
        size += line.length + 1;
      }
      const number = directory * (fileCount / directories) + file;
      if (number % 6_661 === 0) lines.push(`  // ${rarePattern}`);
      lines.push("}");
      writes.push(
        writeFile(
          path.join(folder, `file-${String(file).padStart(3, "0")}.ts`),
          `${lines.join("\n")}\n`,
        ),
      );
    }
    await Promise.all(writes);
  }
  const big = Array.from(
    { length: 88_000 },
    (_, index) => `line ${index}: ${pool[index % pool.length]}`,
  ).join("\n");
  await writeFile(path.join(repository, "big.txt"), `${big}\n`);
  await writeFile(path.join(repository, ".gitignore"), "ignored/\n");
  git("init", "-q");
  git("add", "-A");
  git("commit", "-q", "-m", "generated");
  await writeFile(marker, "");
  console.error(`generated in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

/**
 * Times the tool and its baseline alternately (after one warm-up of each), so load from other
 * processes on a shared machine falls on both; returns the medians.
 */
async function pair(
  tool: () => Promise<unknown>,
  baseline: () => Promise<unknown>,
): Promise<{ tool: number; baseline: number }> {
  await tool();
  await baseline();
  const toolSamples: number[] = [];
  const baselineSamples: number[] = [];
  for (let index = 0; index < runs; index++) {
    let started = performance.now();
    await tool();
    toolSamples.push(performance.now() - started);
    started = performance.now();
    await baseline();
    baselineSamples.push(performance.now() - started);
  }
  return { tool: median(toolSamples), baseline: median(baselineSamples) };
}

/** Runs a program and consumes its output, as the raw baseline. */
function raw(program: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { cwd: repository, stdio: ["ignore", "pipe", "ignore"] });
    child.stdout.on("data", () => {});
    child.on("error", reject);
    child.on("close", () => resolve());
  });
}

function context(): ToolContext {
  return {
    signal: new AbortController().signal,
    workspace: repository,
    callId: "bench",
    document: { sections: {}, update: (sections) => sections },
  };
}

async function call(tools: AnyTool[], name: string, input: unknown): Promise<void> {
  const tool = tools.find((candidate) => candidate.name === name) as AnyTool;
  const result = await tool.execute(tool.inputSchema.parse(input), context());
  if (!result.ok) throw new Error(`${name} failed: ${result.output}`);
}

interface Row {
  name: string;
  tool: number;
  baseline: number;
  baselineName: string;
  note: string;
}

const format = (ms: number) => (ms >= 100 ? ms.toFixed(0) : ms.toFixed(1));

async function main(): Promise<void> {
  await generate();
  const ripgrep = createTools();
  const fallback = createTools({ ripgrepPath: null });
  const rows: Row[] = [];
  const add = async (
    name: string,
    tool: () => Promise<unknown>,
    baseline: () => Promise<unknown>,
    baselineName: string,
    note = "",
  ) => rows.push({ name, ...(await pair(tool, baseline)), baselineName, note });

  const rgRare = () => raw("rg", ["-n", rarePattern]);
  const rgCommon = () => raw("rg", ["-n", commonPattern]);
  await add(
    `grep rare pattern (${rarePattern}), ripgrep`,
    () => call(ripgrep, "grep", { pattern: rarePattern }),
    rgRare,
    "`rg -n` directly",
    "target ≤ 2×",
  );
  await add(
    `grep common pattern (${commonPattern}), ripgrep`,
    () => call(ripgrep, "grep", { pattern: commonPattern }),
    rgCommon,
    "`rg -n` directly (all matches)",
    "tool stops at 300 matches",
  );
  await add(
    "grep rare pattern, Node fallback",
    () => call(fallback, "grep", { pattern: rarePattern }),
    rgRare,
    "`rg -n` directly",
    "as without ripgrep installed",
  );
  await add(
    "grep common pattern, Node fallback",
    () => call(fallback, "grep", { pattern: commonPattern }),
    rgCommon,
    "`rg -n` directly (all matches)",
    "tool stops at 300 matches",
  );

  const big = path.join(repository, "big.txt");
  const bigSize = (await readFile(big)).length;
  const sizeLabel = `${(bigSize / 1024 / 1024).toFixed(1)} MB`;
  await add(
    `read_file ${sizeLabel}, first 2,000 lines`,
    () => call(ripgrep, "read_file", { path: "big.txt" }),
    () => readFile(big, "utf8").then((text) => text.split("\n").slice(0, 2000)),
    "fs.readFile + split",
  );
  await add(
    `read_file ${sizeLabel}, 200 lines at offset 80,000`,
    () => call(ripgrep, "read_file", { path: "big.txt", offset: 80_000, limit: 200 }),
    () => readFile(big, "utf8").then((text) => text.split("\n").slice(79_999, 80_199)),
    "fs.readFile + split",
  );
  let flip = false;
  await add(
    `edit_file ${sizeLabel}, one unique replacement`,
    () => {
      flip = !flip;
      const [from, to] = flip ? ["line 87998:", "LINE 87998:"] : ["LINE 87998:", "line 87998:"];
      return call(ripgrep, "edit_file", { path: "big.txt", old_string: from, new_string: to });
    },
    async () => {
      const text = await readFile(big, "utf8");
      const index = text.indexOf("line 87998:");
      const same =
        index === -1 ? text : `${text.slice(0, index)}line 87998:${text.slice(index + 11)}`;
      await writeFile(big, same);
    },
    "fs.readFile + indexOf + fs.writeFile",
  );
  if (flip) {
    await call(ripgrep, "edit_file", {
      path: "big.txt",
      old_string: "LINE 87998:",
      new_string: "line 87998:",
    });
  }

  const gitStatus = () => raw("git", ["status", "--porcelain"]);
  await add(
    "snapshotWorkspace, 20,000 files",
    () => snapshotWorkspace(repository),
    gitStatus,
    "`git status --porcelain`",
  );
  const snapshot = await snapshotWorkspace(repository);
  const modified = Array.from({ length: 500 }, (_, index) => {
    const directory = String(index % directories).padStart(3, "0");
    const file = String(Math.floor(index / directories) * 7).padStart(3, "0");
    return path.join(repository, "src", `module-${directory}`, `file-${file}.ts`);
  });
  const originals = await Promise.all(modified.map((file) => readFile(file)));
  await Promise.all(
    modified.map((file, index) => writeFile(file, `${originals[index]}// changed\n`)),
  );
  let changedFiles = 0;
  try {
    await add(
      "changesSince, 500 modified files",
      async () => {
        changedFiles = (await changesSince(repository, snapshot)).files.length;
      },
      gitStatus,
      "`git status --porcelain`",
    );
  } finally {
    await Promise.all(modified.map((file, index) => writeFile(file, originals[index] as Buffer)));
  }
  (rows[rows.length - 1] as Row).note = `${changedFiles} files reported; diff capped at 256 KiB`;

  console.log(
    `\n@gadget/tools benchmark — ${fileCount} files, ${os.cpus().length} cores, median of ${runs} alternating runs\n`,
  );
  console.log("| case | tool (ms) | baseline | baseline (ms) | ratio | note |");
  console.log("|---|---:|---|---:|---:|---|");
  for (const row of rows) {
    const ratio = `${(row.tool / row.baseline).toFixed(2)}×`;
    console.log(
      `| ${row.name} | ${format(row.tool)} | ${row.baselineName} | ${format(row.baseline)} | ${ratio} | ${row.note} |`,
    );
  }
}

await main();
