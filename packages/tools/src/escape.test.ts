// The escape table of issue 4: every way out of the workspace is refused and nothing outside changes.
import { mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { ToolError } from "@gadget/agent";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  callTool,
  directoryState,
  git,
  makeWorkspace,
  type TestWorkspace,
  toolContext,
} from "./test-support.ts";
import { createTools } from "./tools.ts";
import { resolveInWorkspace } from "./workspace-path.ts";

let workspace: TestWorkspace;
let before: Record<string, string>;
const tools = createTools();

beforeAll(async () => {
  workspace = await makeWorkspace({ "src/app.ts": "export const app = 1;\n", x: "inside x\n" });
  git(workspace.root, "init", "-q");
  await symlink(workspace.outside, path.join(workspace.root, "linked-dir"));
  await symlink(
    path.join(workspace.outside, "secret.txt"),
    path.join(workspace.root, "linked-file"),
  );
  await symlink(
    path.join(workspace.outside, "created-by-tool.txt"),
    path.join(workspace.root, "dangling"),
  );
  await symlink(
    path.join(workspace.root, ".git", "hooks"),
    path.join(workspace.root, "hooks-link"),
  );
  before = await directoryState(workspace.outside);
});

afterAll(async () => {
  // Nothing outside the workspace was created, changed or removed by any case below.
  expect(await directoryState(workspace.outside)).toEqual(before);
  await workspace.cleanup();
});

async function refused(name: string, input: Record<string, unknown>): Promise<ToolError> {
  const error = await callTool(tools, name, input, toolContext(workspace.root)).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error, `${name} ${JSON.stringify(input)} should be refused`).toBeInstanceOf(ToolError);
  return error as ToolError;
}

describe("paths that leave the workspace", () => {
  const cases: [string, string, Record<string, unknown>][] = [
    ["../ path read", "read_file", { path: "../outside/secret.txt" }],
    ["../ path hidden in the middle", "read_file", { path: "src/../../outside/secret.txt" }],
    ["absolute path read", "read_file", { path: "/etc/passwd" }],
    ["absolute path write", "write_file", { path: "/tmp/gadget-escape.txt", content: "x" }],
    ["../ path write", "write_file", { path: "../outside/new.txt", content: "x" }],
    ["symlinked directory read", "read_file", { path: "linked-dir/secret.txt" }],
    ["symlinked directory write", "write_file", { path: "linked-dir/new.txt", content: "x" }],
    ["symlinked directory listing", "list_dir", { path: "linked-dir" }],
    ["symlinked directory glob", "glob", { pattern: "*", path: "linked-dir" }],
    ["symlinked directory in a glob pattern", "glob", { pattern: "linked-dir/*" }],
    ["symlinked directory grep", "grep", { pattern: "secret", path: "linked-dir" }],
    ["symlinked file read", "read_file", { path: "linked-file" }],
    ["symlinked file write", "write_file", { path: "linked-file", content: "overwritten" }],
    [
      "symlinked file edit",
      "edit_file",
      { path: "linked-file", old_string: "outside", new_string: "x" },
    ],
    ["symlinked file grep", "grep", { pattern: "secret", path: "linked-file" }],
    ["dangling symlink written through", "write_file", { path: "dangling", content: "escaped" }],
    ["git hook write", "write_file", { path: ".git/hooks/pre-commit", content: "#!/bin/sh\nid\n" }],
    ["git config write", "write_file", { path: ".git/config", content: "[core]\n" }],
    [
      "git hook through a symlink",
      "write_file",
      { path: "hooks-link/post-checkout", content: "id" },
    ],
    ["git directory edit", "edit_file", { path: ".git/HEAD", old_string: "ref", new_string: "x" }],
    ["glob pattern with ..", "glob", { pattern: "../outside/*" }],
    ["absolute glob pattern", "glob", { pattern: "/etc/*" }],
    ["home directory", "read_file", { path: "~/.bashrc" }],
  ];
  for (const [title, tool, input] of cases) {
    it(`refuses ${title}`, async () => {
      const error = await refused(tool, input);
      expect(error.message).toMatch(/Refused|outside|\.git/);
    });
  }

  it("says why and what to do instead", async () => {
    const error = await refused("read_file", { path: "../outside/secret.txt" });
    expect(error.code).toBe("path_outside_workspace");
    expect(error.message).toContain("relative to the workspace root");
    const absolute = await refused("read_file", { path: path.join(workspace.root, "src/app.ts") });
    expect(absolute.message).toContain('Use "src/app.ts" instead');
    const hook = await refused("write_file", { path: ".git/hooks/pre-commit", content: "" });
    expect(hook.code).toBe("git_dir_write");
  });

  it("still reads .git and follows symbolic links that stay inside", async () => {
    await symlink("src/app.ts", path.join(workspace.root, "inner-link"));
    const result = await callTool(
      tools,
      "read_file",
      { path: "inner-link" },
      toolContext(workspace.root),
    );
    expect(result.output).toContain("export const app = 1;");
    const head = await callTool(
      tools,
      "read_file",
      { path: ".git/HEAD" },
      toolContext(workspace.root),
    );
    expect(head.output).toContain("ref:");
  });

  it("refuses a dangling symlink pointing outside at the confinement layer", async () => {
    await expect(
      resolveInWorkspace(workspace.root, "dangling", { forWrite: true }),
    ).rejects.toThrow(/symbolic link/);
    await expect(readFile(path.join(workspace.outside, "created-by-tool.txt"))).rejects.toThrow();
  });
});

describe("commands that leave the workspace or need a shell", () => {
  const cases: [string, string][] = [
    ["cd /", "cd / && ls"],
    ["cd ..", "cd .. && cat x"],
    ["cd through a symlinked directory", "cd linked-dir && cat secret.txt"],
    ["; chain", "ls; rm x"],
    ["command substitution", "echo $(id)"],
    ["command substitution in double quotes", 'echo "$(id)"'],
    ["backticks", "echo `id`"],
    ["redirect out", "echo hi > ../outside/x"],
    ["redirect append", "echo hi >> x"],
    ["redirect in", "cat < x"],
    ["pipe", "cat x | sh"],
    ["or", "false || rm x"],
    ["background", "sleep 10 &"],
    ["export", "export A=1 && env"],
    ["source", "source .env && npm test"],
    ["environment assignment", "GIT_SSH_COMMAND=id git fetch"],
    ["sudo", "sudo rm -rf /"],
    ["git -c core.sshCommand", "git -c core.sshCommand=id fetch"],
    ["git -C with push", "git -C . push origin main"],
    ["git config write", "git config core.sshCommand id"],
    ["bash -c", 'bash -c "rm x"'],
    ["sudo behind a wrapper", "timeout 5 sudo id"],
    ["absolute path argument", "cat /etc/passwd"],
    ["../ argument", "cat ../outside/secret.txt"],
    ["argument through a symlinked directory", "cat linked-dir/secret.txt"],
    ["--option=/outside", `touch --reference=${"/etc/passwd"} x`],
    ["variable", "rm $HOME/x"],
    ["home directory", "ls ~"],
    ["newline", "ls\nrm x"],
  ];
  for (const [title, command] of cases) {
    it(`refuses ${title}: ${JSON.stringify(command)}`, async () => {
      const error = await refused("run_command", { command });
      expect(error.code).toBe("command_refused");
      expect(error.message.length).toBeGreaterThan(30);
    });
  }

  it("refuses the cwd parameter outside the workspace", async () => {
    await refused("run_command", { command: "ls", cwd: ".." });
    await refused("run_command", { command: "ls", cwd: "linked-dir" });
  });

  it("runs nothing of a chain that holds a refused step", async () => {
    await refused("run_command", { command: "touch made-by-chain && sudo id" });
    await expect(readFile(path.join(workspace.root, "made-by-chain"))).rejects.toThrow();
  });

  it("leaves the inside files as they were", async () => {
    expect(await readFile(path.join(workspace.root, "x"), "utf8")).toBe("inside x\n");
    await mkdir(path.join(workspace.root, "tmp"), { recursive: true });
    await writeFile(path.join(workspace.root, "tmp", "ok"), "");
  });
});
