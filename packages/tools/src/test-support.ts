// Fixtures for this package's tests: temporary workspaces with a sentinel directory beside them,
// a tool context, and a small living document.
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, realpath, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type {
  AnyTool,
  LivingDocument,
  ToolContext,
  ToolOutputChunk,
  ToolResult,
} from "@gadget/agent";

export interface TestWorkspace {
  /** Real path of the workspace root. */
  root: string;
  /** A directory beside the workspace that nothing may read or change. */
  outside: string;
  /** Removes both. */
  cleanup(): Promise<void>;
}

/** Creates a workspace holding `files` (path → content) and a sentinel directory outside it. */
export async function makeWorkspace(files: Record<string, string> = {}): Promise<TestWorkspace> {
  const base = await realpath(await mkdtemp(path.join(os.tmpdir(), "gadget-tools-test-")));
  const root = path.join(base, "workspace");
  const outside = path.join(base, "outside");
  await mkdir(root);
  await mkdir(outside);
  await writeFile(path.join(outside, "secret.txt"), "outside secret\n");
  await writeFile(path.join(outside, "x"), "outside x\n");
  for (const [file, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, file)), { recursive: true });
    await writeFile(path.join(root, file), content);
  }
  return { root, outside, cleanup: () => rm(base, { recursive: true, force: true }) };
}

/** Every file under a directory with its content and mode, to prove nothing changed. */
export async function directoryState(directory: string): Promise<Record<string, string>> {
  const state: Record<string, string> = {};
  const visit = async (current: string) => {
    for (const entry of await readdir(current, { withFileTypes: true })) {
      const full = path.join(current, entry.name);
      const key = path.relative(directory, full);
      if (entry.isDirectory()) {
        state[`${key}/`] = "dir";
        await visit(full);
      } else {
        const stats = await stat(full);
        // Sockets and pipes have no content to read; that they exist is what counts.
        state[key] = stats.isFile()
          ? `${stats.mode}:${await readFile(full, "utf8")}`
          : `${stats.mode}:special`;
      }
    }
  };
  await visit(directory);
  return state;
}

/** A living document as the engine keeps it (appended with a pass label, confidence replaced). */
export function testDocument(pass = 1): LivingDocument {
  const sections: Record<string, string> = {};
  return {
    get sections() {
      return sections;
    },
    update(updates) {
      for (const [name, value] of Object.entries(updates)) {
        const existing = sections[name];
        if (name === "confidence") sections[name] = value;
        else
          sections[name] = existing
            ? `${existing}\n[Pass ${pass}] ${value}`
            : `[Pass ${pass}] ${value}`;
      }
      return { ...sections };
    },
  };
}

export interface TestContext extends ToolContext {
  output: ToolOutputChunk[];
  controller: AbortController;
}

/** A tool context for `root` that records streamed output. */
export function toolContext(root: string): TestContext {
  const controller = new AbortController();
  const output: ToolOutputChunk[] = [];
  return {
    signal: controller.signal,
    workspace: root,
    callId: "call-1",
    onOutput: (chunk) => output.push(chunk),
    document: testDocument(),
    output,
    controller,
  };
}

/** Runs a tool by name with input validated by its schema, as the engine does. */
export async function callTool(
  tools: AnyTool[],
  name: string,
  input: unknown,
  context: ToolContext,
): Promise<ToolResult> {
  const tool = tools.find((candidate) => candidate.name === name);
  if (!tool) throw new Error(`no tool ${name}`);
  const parsed = tool.inputSchema.parse(input);
  return tool.execute(parsed, context);
}

/** Runs git in a test repository with a fixed identity. */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync(
    "git",
    [
      "-c",
      "user.name=Test",
      "-c",
      "user.email=test@example.com",
      "-c",
      "init.defaultBranch=main",
      ...args,
    ],
    { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] },
  );
}

/** Whether a process runs (a zombie left for an absent reaper counts as gone). */
export async function processRunning(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => undefined);
  if (stat === undefined) return process.platform !== "linux";
  const state = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
  return state !== "Z" && state !== "X";
}

/** Polls `check` until it returns true or `timeoutMs` passes; returns its last answer. */
export async function eventually(
  check: () => Promise<boolean>,
  timeoutMs = 5_000,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return check();
}
