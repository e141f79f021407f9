// What one PreToolUse hook adds to a tool call: the same turn (an in-process model asking for one
// no-op call per pass) without hooks, with a `true` hook and with a `node` hook that reads its
// stdin, all in bubblewrap, rounds interleaved in one run; beside each, the hook's program spawned
// bare with the same stdin (its own process time). Target: added ≤ the hook's own time + 15 ms.
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { type ChatModel, defineTool, runTurn, type TurnHooks } from "@gadget/agent";
import type { HooksConfig } from "@gadget/protocol";
import {
  type CommandConfinement,
  confine,
  detectSandbox,
  type HostLayout,
  spawnConfined,
} from "@gadget/sandbox";
import { percentile } from "@gadget/testkit/measure";
import { z } from "zod";
import { SandboxHooks } from "../src/hooks/hook-runner.ts";

// Short rounds, the arms and baselines interleaved in each, so a busy machine's drift hits all alike.
const callsPerRound = Number(process.env.BENCH_CALLS ?? 5);
const rounds = Number(process.env.BENCH_ROUNDS ?? 24);

const hookSource =
  'let text = "";\nprocess.stdin.on("data", (chunk) => (text += chunk));\nprocess.stdin.on("end", () => JSON.parse(text));\n';

/** Asks for one new no-op call per pass, `calls` passes, then answers. */
function instantModel(calls: number): ChatModel {
  let pass = 0;
  const chunk = (delta: Record<string, unknown>, finish: string | null) =>
    ({
      id: "bench",
      object: "chat.completion.chunk",
      created: 0,
      model: "bench",
      choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
    }) as never;
  return {
    async *stream() {
      pass += 1;
      if (pass > calls) {
        yield chunk({ role: "assistant", content: "done" }, "stop");
        return;
      }
      const call = { index: 0, id: `call-${pass}`, type: "function" };
      const tool_calls = [{ ...call, function: { name: "noop", arguments: `{"n":${pass}}` } }];
      yield chunk({ role: "assistant", content: "", tool_calls }, "tool_calls");
    },
  };
}

const noop = defineTool({
  name: "noop",
  description: "Does nothing.",
  permission: "read",
  inputSchema: z.object({ n: z.number() }),
  async execute() {
    return { ok: true, output: "ok", summary: "ok" };
  },
});

/** Milliseconds of each pass (one model answer and one tool call) of one turn. */
async function passTimes(workspace: string, hooks: TurnHooks | undefined): Promise<number[]> {
  const turn = runTurn(
    {
      goal: "bench",
      provider: { baseUrl: "http://in-process.invalid/v1", apiKey: "none", modelId: "bench" },
      workspace,
      tools: [noop],
    },
    { model: instantModel(callsPerRound), ...(hooks ? { hooks } : {}) },
  );
  const times: number[] = [];
  let started = 0;
  for await (const event of turn) {
    if (event.type === "status" && event.data.phase === "model") started = performance.now();
    if (event.type === "tool_result") times.push(performance.now() - started);
    if (event.type === "hook" && !event.data.ok) throw new Error(event.data.output);
  }
  return times;
}

/** Milliseconds the program takes in the sandbox alone (no engine, no hook runner), stdin as a hook's. */
async function sandboxedRun(
  confinement: CommandConfinement,
  argv: string[],
  cwd: string,
  input: string,
): Promise<number> {
  const started = performance.now();
  const confined = await spawnConfined(confinement, { argv, cwd, env: { PATH: "/usr/bin:/bin" } });
  confined.child.stdin.on("error", () => undefined);
  confined.child.stdin.end(input);
  confined.child.stdout.resume();
  confined.child.stderr.resume();
  await confined.exited;
  return performance.now() - started;
}

/** Milliseconds the hook's program takes spawned bare, its stdin written and closed. */
function bareRun(argv: string[], cwd: string, input: string): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0] as string, argv.slice(1), {
      cwd,
      stdio: ["pipe", "ignore", "ignore"],
    });
    child.on("error", reject);
    child.stdin.on("error", () => undefined);
    child.stdin.end(input);
    child.on("exit", () => resolve(performance.now() - started));
  });
}

async function main(): Promise<void> {
  const base = await mkdtemp(path.join(os.tmpdir(), "gadget-hooks-bench-"));
  try {
    const workspace = path.join(base, "workspace");
    await mkdir(path.join(workspace, ".gadget"), { recursive: true });
    await writeFile(path.join(workspace, ".gadget", "hook.mjs"), hookSource);
    const detection = await detectSandbox({
      layout: {
        home: os.homedir(),
        searchPath: (process.env.PATH ?? "").split(path.delimiter),
        nodePath: process.execPath,
        uid: process.getuid?.() ?? -1,
      } satisfies HostLayout,
      hidden: [],
      runtimeDirectory: path.join(base, "run"),
    });
    if (!detection.ok) throw new Error(detection.problem);
    const confinement: CommandConfinement = confine(detection.sandbox, {
      workspace,
      home: path.join(base, "home"),
      network: { mode: "none", allowedHosts: [] },
      hidden: [path.join(base, "run")],
    });
    const hooksOf = (command: string[]): SandboxHooks => {
      const hooks: HooksConfig = { PreToolUse: [{ matcher: "noop", command }] };
      return new SandboxHooks({
        hooks,
        confinement,
        directory: workspace,
        turn: { id: "bench", session: "bench", project: "bench" },
        secretValues: [],
        projectEnv: {},
        hostEnv: { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: os.homedir(), LANG: "C.UTF-8" },
      });
    };
    const arms = [
      { name: "no hook", command: null },
      { name: "hook `true`", command: ["true"] },
      { name: "hook `node .gadget/hook.mjs`", command: [process.execPath, ".gadget/hook.mjs"] },
    ] as const;
    const input = `${JSON.stringify({ event: "PreToolUse", tool: "noop", callId: "c", params: { n: 1 }, turn: { id: "bench" } })}\n`;
    const samples = new Map<string, { turn: number[]; bare: number[]; sandboxed: number[] }>(
      arms.map((arm) => [arm.name, { turn: [], bare: [], sandboxed: [] }]),
    );
    // Warm-up, then rounds with the arms interleaved, so drift on a busy machine hits all alike.
    for (const arm of arms)
      await passTimes(workspace, arm.command ? hooksOf([...arm.command]) : undefined);
    for (let round = 0; round < rounds; round++) {
      for (const arm of arms) {
        const entry = samples.get(arm.name)!;
        entry.turn.push(
          ...(await passTimes(workspace, arm.command ? hooksOf([...arm.command]) : undefined)),
        );
        if (arm.command)
          for (let index = 0; index < callsPerRound; index++) {
            entry.bare.push(await bareRun([...arm.command], workspace, input));
            entry.sandboxed.push(
              await sandboxedRun(confinement, [...arm.command], workspace, input),
            );
          }
      }
    }
    const none = percentile(samples.get("no hook")!.turn, 50);
    const format = (value: number) => value.toFixed(1);
    console.log(
      `\nOne PreToolUse hook per tool call, bubblewrap ${detection.sandbox.info.version ?? ""}, ${callsPerRound * rounds} calls per arm (ms):\n`,
    );
    console.log(
      "| per tool call | p50 / p95 | added (p50) | the program bare (p50) | the program in the sandbox alone (p50) | added − program bare | added − program sandboxed |",
    );
    console.log("|---|---|---|---|---|---|---|");
    for (const arm of arms) {
      const entry = samples.get(arm.name)!;
      const p50 = percentile(entry.turn, 50);
      const first = `| ${arm.name} | ${format(p50)} / ${format(percentile(entry.turn, 95))} |`;
      if (!arm.command) {
        console.log(`${first} — | — | — | — | — |`);
        continue;
      }
      const bare = percentile(entry.bare, 50);
      const sandboxed = percentile(entry.sandboxed, 50);
      const added = p50 - none;
      console.log(
        `${first} +${format(added)} | ${format(bare)} | ${format(sandboxed)} | ${format(added - bare)} (target ≤ 15) | ${format(added - sandboxed)} |`,
      );
    }
  } finally {
    await rm(base, { recursive: true, force: true });
  }
}

await main();
