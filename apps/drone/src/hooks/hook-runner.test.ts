// The hook runner in this machine's real sandbox: what each way a hook can end comes to (a failure
// is reported and the turn goes on), hooks of one event in a chain, matchers on the whole tool name,
// and secrets kept out of what a hook's run shows.
import { mkdir, rm } from "node:fs/promises";
import path from "node:path";
import type { Hook, HooksConfig } from "@gadget/protocol";
import { confine } from "@gadget/sandbox";
import { makeTempDir } from "@gadget/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { droneSandbox } from "../testing/sandbox.ts";
import { SandboxHooks } from "./hook-runner.ts";

const secret = "sk-live-hook-secret-4e1f";
let root: string;
let runnerOf: (hooks: HooksConfig) => SandboxHooks;

beforeAll(async () => {
  root = await makeTempDir("gadget-hook-runner-");
  const workspace = path.join(root, "worktree");
  await mkdir(workspace, { recursive: true });
  const config = {
    server: "http://127.0.0.1:9",
    droneId: "65f1a2b3c4d5e6f7a8b9c0d1",
    credential: "hook-runner-credential",
    name: "unit",
    workspace: path.join(root, "workspaces"),
    capacity: 1,
    registeredAt: new Date().toISOString(),
  };
  const { sandbox, hiddenPaths } = await droneSandbox(config);
  const confinement = confine(sandbox, {
    workspace,
    home: path.join(root, "home"),
    network: { mode: "none", allowedHosts: [] },
    hidden: [config.workspace, ...hiddenPaths],
  });
  runnerOf = (hooks) =>
    new SandboxHooks({
      hooks,
      confinement,
      directory: workspace,
      turn: { id: "t1", session: "s1", project: "p1" },
      secretValues: [secret],
      projectEnv: { PROJECT_TOKEN: secret },
      hostEnv: { PATH: "/usr/local/bin:/usr/bin:/bin", LANG: "C.UTF-8" },
    });
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const node = (source: string, extra: Partial<Hook> = {}): Hook => ({
  command: ["node", "-e", source],
  ...extra,
});
const signal = new AbortController().signal;

describe("SandboxHooks", () => {
  it("reports what a hook came to, and a failed one lets the call go on", async () => {
    const runner = runnerOf({
      PreToolUse: [
        node("process.stderr.write('lint crashed'); process.exit(1)"),
        node("console.log('{not json')"),
        { command: ["no-such-hook-program"] },
      ],
    });
    const verdict = await runner.run(
      { event: "PreToolUse", tool: "run_command", callId: "c1", params: { command: "ls" } },
      { signal },
    );
    expect(verdict.blocked).toBeUndefined();
    expect(verdict.params).toBeUndefined();
    expect(verdict.runs.map((run) => [run.outcome, run.ok])).toEqual([
      ["failed", false],
      ["failed", false],
      ["failed", false],
    ]);
    expect(verdict.runs[0]?.output).toBe("exit code 1: lint crashed");
    expect(verdict.runs[1]?.output).toContain("not the JSON a hook answers with");
    expect(verdict.runs[2]?.output).toMatch(/no-such-hook-program/);
  });

  it("chains hooks: a later one sees the params an earlier one wrote, the first block ends it", async () => {
    const seen = "let t='';process.stdin.on('data',c=>t+=c).on('end',()=>{const i=JSON.parse(t);";
    const runner = runnerOf({
      PreToolUse: [
        node(`${seen}console.log(JSON.stringify({params:{path:'docs/'+i.params.path}}))})`),
        node(
          `${seen}process.stderr.write('saw '+i.params.path+' in '+i.turn.id);process.exit(2)})`,
        ),
        node("console.log(JSON.stringify({context:'never runs'}))"),
      ],
    });
    const verdict = await runner.run(
      { event: "PreToolUse", tool: "write_file", callId: "c2", params: { path: "a.md" } },
      { signal },
    );
    expect(verdict.params).toEqual({ path: "docs/a.md" });
    expect(verdict.blocked).toBe("saw docs/a.md in t1");
    expect(verdict.runs.map((run) => run.outcome)).toEqual(["rewrote", "blocked"]);
    expect(verdict.context).toBeUndefined();
  });

  it("matches a hook's matcher against the whole tool name", async () => {
    const runner = runnerOf({
      PreToolUse: [{ matcher: "read", command: ["true"] }],
      PostToolUse: [{ matcher: "read_file|grep", command: ["true"] }],
    });
    expect(runner.has("PreToolUse", "read_file")).toBe(false);
    expect(runner.has("PostToolUse", "read_file")).toBe(true);
    expect(runner.has("PostToolUse", "grep")).toBe(true);
    expect(runner.has("PostToolUse", "run_command")).toBe(false);
    expect(runner.has("Stop")).toBe(false);
  });

  it("keeps secrets out of what a run shows, and a hook's plain stdout is context after a call", async () => {
    const runner = runnerOf({
      PostToolUse: [node("console.log('token is ' + process.env.PROJECT_TOKEN)")],
    });
    const verdict = await runner.run(
      {
        event: "PostToolUse",
        tool: "read_file",
        callId: "c3",
        params: {},
        result: { ok: true, output: "x", summary: "read" },
      },
      { signal },
    );
    expect(verdict.runs[0]).toMatchObject({ outcome: "context", ok: true });
    expect(JSON.stringify(verdict.runs)).not.toContain(secret);
    expect(verdict.runs[0]?.output).toBe("token is [redacted]");
  });
});
