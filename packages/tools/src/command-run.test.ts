// Running commands: chains, cwd, globs, output caps and streaming, timeouts that end whole process
// groups, and environments without secrets.
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCommand } from "./command-run.ts";
import {
  callTool,
  eventually,
  makeWorkspace,
  processRunning,
  type TestWorkspace,
  toolContext,
} from "./test-support.ts";
import { createTools } from "./tools.ts";

let workspace: TestWorkspace;

beforeAll(async () => {
  workspace = await makeWorkspace({
    "a.txt": "alpha\n",
    "b.txt": "beta\n",
    ".hidden.txt": "hidden\n",
    "packages/app/package.json": "{}\n",
    "packages/app/src/index.ts": "export {};\n",
  });
});

afterAll(() => workspace.cleanup());

const node = process.execPath;

function run(command: string, options: Partial<Parameters<typeof runCommand>[1]> = {}) {
  return runCommand(command, { workspace: workspace.root, ...options });
}

describe("runCommand", () => {
  it("returns the output and exit code", async () => {
    const result = await run(
      `${node} -e "console.log('out'); console.error('err'); process.exit(3)"`,
    );
    expect(result.ok).toBe(false);
    expect(result.exitCode).toBe(3);
    expect(result.output).toContain("out");
    expect(result.output).toContain("err");
    expect(result.output).toMatch(/\[exit code 3\]$/);
  });

  it("stops a chain at the first failure and says what did not run", async () => {
    const result = await run("touch first.txt && false && touch never.txt");
    expect(result.ok).toBe(false);
    expect(result.steps.map((step) => step.exitCode)).toEqual([0, 1]);
    expect(result.notRun).toEqual(["touch never.txt"]);
    expect(result.output).toContain("`false` failed; not run: `touch never.txt`");
    await expect(readFile(path.join(workspace.root, "first.txt"))).resolves.toBeDefined();
    await expect(readFile(path.join(workspace.root, "never.txt"))).rejects.toThrow();
  });

  it("moves the working directory with cd and with the cwd option", async () => {
    const chained = await run("cd packages/app && pwd && cd src && ls");
    expect(chained.ok).toBe(true);
    expect(chained.output).toContain(path.join(workspace.root, "packages/app"));
    expect(chained.output).toContain("index.ts");
    expect(chained.steps.map((step) => step.cwd)).toEqual(["packages/app", "packages/app/src"]);
    const option = await run("pwd", { cwd: "packages/app" });
    expect(option.output).toContain(path.join(workspace.root, "packages/app"));
    const inside = await run("cd packages/app && cd ../.. && pwd");
    expect(inside.output.split("\n")[0]).toBe(workspace.root);
  });

  it("fails a cd into a missing directory like a shell", async () => {
    const result = await run("cd nowhere && ls");
    expect(result.ok).toBe(false);
    expect(result.output).toContain("cd: nowhere: No such directory");
    expect(result.notRun).toEqual(["ls"]);
  });

  it("expands unquoted globs inside the workspace and keeps quoted ones", async () => {
    const expanded = await run(
      `${node} -e "console.log(JSON.stringify(process.argv.slice(1)))" src/*.ts *.json '*.json' none*.md`,
      { cwd: "packages/app" },
    );
    expect(expanded.output).toContain('["src/index.ts","package.json","*.json","none*.md"]');
  });

  it("says when a program does not exist", async () => {
    const result = await run("no-such-program-gadget --version");
    expect(result.exitCode).toBe(127);
    expect(result.output).toContain("command not found: no-such-program-gadget");
  });

  it("has no stdin", async () => {
    const result = await run(
      `${node} -e "process.stdin.on('data',()=>{}).on('end',()=>console.log('stdin closed'))"`,
    );
    expect(result.output).toContain("stdin closed");
  });

  it("caps output to its head and tail and says how much was left out", async () => {
    const result = await run(
      `${node} -e "for (let i = 1; i <= 5000; i++) console.log('line ' + i)"`,
      {
        maxCommandOutputLines: 20,
        maxCommandOutputBytes: 100_000,
      },
    );
    const lines = result.output.split("\n");
    expect(lines[0]).toBe("line 1");
    expect(lines).toContain("line 10");
    expect(lines).not.toContain("line 11");
    expect(result.output).toContain("line 5000");
    expect(result.output).toMatch(/4980 lines .* omitted/);
    expect(result.truncated).toBe(true);
    const bytes = await run(`${node} -e "process.stdout.write('x'.repeat(50000) + 'END')"`, {
      maxCommandOutputBytes: 1000,
    });
    expect(bytes.output.length).toBeLessThan(1200);
    expect(bytes.output).toContain("END");
  });

  it("streams output as it arrives", async () => {
    const chunks: string[] = [];
    await run(`${node} -e "console.log('one'); setTimeout(() => console.error('two'), 50)"`, {
      onOutput: (chunk) => chunks.push(`${chunk.stream}:${chunk.text}`),
    });
    expect(chunks.join("")).toContain("stdout:one");
    expect(chunks.join("")).toContain("stderr:two");
  });

  it("stops streaming after the stream cap but keeps capturing", async () => {
    const chunks: string[] = [];
    const result = await run(
      `${node} -e "for (let i = 0; i < 2000; i++) console.log('row ' + i)"`,
      {
        maxStreamedOutputBytes: 1000,
        onOutput: (chunk) => chunks.push(chunk.text),
      },
    );
    expect(chunks.join("").length).toBeLessThan(1300);
    expect(chunks.join("")).toContain("live output stopped");
    expect(result.output).toContain("row 1999");
  });

  it("kills a command that ignores SIGTERM when it times out", async () => {
    const result = await run(
      `${node} -e "process.on('SIGTERM', () => console.log('ignoring SIGTERM')); console.log('pid ' + process.pid); setInterval(() => {}, 1000)"`,
      { timeoutMs: 1000, killGraceMs: 500 },
    );
    expect(result.timedOut).toBe(true);
    expect(result.ok).toBe(false);
    expect(result.output).toContain("ignoring SIGTERM");
    expect(result.output).toMatch(/timed out after 1 s/);
    const pid = Number(/pid (\d+)/.exec(result.output)?.[1]);
    expect(await eventually(async () => !(await processRunning(pid)))).toBe(true);
  });

  it("ends a timed-out command's children too", async () => {
    const script = [
      "const { spawn } = require('child_process');",
      "const child = spawn(process.execPath, ['-e', 'process.on(\\'SIGTERM\\', () => {}); setInterval(() => {}, 1000)'], { stdio: 'ignore' });",
      "console.log('grandchild ' + child.pid);",
      "setInterval(() => {}, 1000);",
    ].join(" ");
    await writeFile(path.join(workspace.root, "spawner.cjs"), script);
    const result = await run(`${node} spawner.cjs`, { timeoutMs: 1500, killGraceMs: 300 });
    expect(result.timedOut).toBe(true);
    const grandchild = Number(/grandchild (\d+)/.exec(result.output)?.[1]);
    expect(grandchild).toBeGreaterThan(0);
    expect(await eventually(async () => !(await processRunning(grandchild)))).toBe(true);
  });

  it("ends what a finished command left running in its group", async () => {
    const script = [
      "const { spawn } = require('child_process');",
      "const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });",
      "child.unref(); console.log('leftover ' + child.pid);",
    ].join(" ");
    await writeFile(path.join(workspace.root, "leaver.cjs"), script);
    const result = await run(`${node} leaver.cjs`, { killGraceMs: 300 });
    expect(result.ok).toBe(true);
    const leftover = Number(/leftover (\d+)/.exec(result.output)?.[1]);
    expect(await eventually(async () => !(await processRunning(leftover)))).toBe(true);
  });

  it("ends the process group when the call is aborted", async () => {
    const controller = new AbortController();
    const running = run(
      `${node} -e "console.log('pid ' + process.pid); setInterval(() => {}, 1000)"`,
      {
        signal: controller.signal,
        onOutput: () => controller.abort(),
      },
    );
    const result = await running;
    expect(result.aborted).toBe(true);
    expect(result.output).toContain("[cancelled");
    const pid = Number(/pid (\d+)/.exec(result.output)?.[1]);
    expect(await eventually(async () => !(await processRunning(pid)))).toBe(true);
  });

  it("passes only PATH, HOME, the locale, TZ and the project's own variables, non-interactively", async () => {
    const env = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      LANG: "C.UTF-8",
      LC_TIME: "C",
      TZ: "Europe/Paris",
      OPENAI_API_KEY: "sk-live-123456",
      GITHUB_TOKEN: "ghp_abcdef",
      // Named like nothing secret, yet secret: an allowlist, not a list of suspicious names.
      DATABASE_URL: "postgres://app:pw-4b1e@db/app",
      GH_PAT: "ghp_pat_c0ffee",
      UNRELATED: "harmless but not asked for",
    };
    const result = await run(`${node} -e "console.log(JSON.stringify(process.env))"`, {
      env,
      projectEnv: { NODE_ENV: "test", FEATURE: "on" },
    });
    const seen = JSON.parse(result.output.split("\n")[0] as string) as Record<string, string>;
    expect(seen).toMatchObject({ LANG: "C.UTF-8", LC_TIME: "C", TZ: "Europe/Paris" });
    expect(seen).toMatchObject({ NODE_ENV: "test", FEATURE: "on" });
    for (const name of ["OPENAI_API_KEY", "GITHUB_TOKEN", "DATABASE_URL", "GH_PAT", "UNRELATED"]) {
      expect(seen[name], name).toBeUndefined();
    }
    expect(result.output).not.toMatch(/sk-live|ghp_|pw-4b1e/);
    expect(seen).toMatchObject({ CI: "1", PAGER: "cat", GIT_TERMINAL_PROMPT: "0" });
  });

  it("drops an allowed variable that holds a secret value", async () => {
    const result = await run(`${node} -e "console.log(process.env.TZ ?? 'unset')"`, {
      env: { PATH: process.env.PATH, TZ: "zone-with-cred-9f8e7d" },
      secretValues: ["cred-9f8e7d"],
    });
    expect(result.output.split("\n")[0]).toBe("unset");
  });

  it("redacts secret values that a command prints", async () => {
    await writeFile(path.join(workspace.root, "leak.txt"), "the credential is cred-9f8e7d!\n");
    const chunks: string[] = [];
    const result = await run("cat leak.txt", {
      secretValues: ["cred-9f8e7d"],
      onOutput: (chunk) => chunks.push(chunk.text),
    });
    expect(result.output).toContain("the credential is [redacted]!");
    expect(chunks.join("")).not.toContain("cred-9f8e7d");
  });
});

describe("the run_command tool", () => {
  const tools = createTools({ commandTimeoutMs: 10_000 });

  it("reports ok, a one-line summary and structured data", async () => {
    await mkdir(path.join(workspace.root, "tool"), { recursive: true });
    const context = toolContext(workspace.root);
    const result = await callTool(tools, "run_command", { command: "ls", cwd: "tool" }, context);
    expect(result.ok).toBe(true);
    expect(result.summary).toBe("Ran `ls` (exit 0)");
    expect(result.output).toContain("(no output)");
    const failing = await callTool(tools, "run_command", { command: "ls missing-file" }, context);
    expect(failing.ok).toBe(false);
    expect(failing.summary).toMatch(/exit 2/);
    expect(failing.data).toMatchObject({ exitCode: 2, timedOut: false });
  });

  it("streams through the context's onOutput", async () => {
    const context = toolContext(workspace.root);
    await callTool(tools, "run_command", { command: "cat a.txt" }, context);
    expect(context.output.map((chunk) => chunk.text).join("")).toContain("alpha");
  });

  it("caps timeout_ms at the maximum", async () => {
    const capped = createTools({ maxCommandTimeoutMs: 800, killGraceMs: 200 });
    const context = toolContext(workspace.root);
    const result = await callTool(
      capped,
      "run_command",
      { command: `${node} -e "setInterval(() => {}, 1000)"`, timeout_ms: 3_600_000 },
      context,
    );
    expect(result.summary).toContain("timed out");
  });
});
