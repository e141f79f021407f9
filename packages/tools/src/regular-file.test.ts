// Files the model prepared: a named pipe is refused at once by every tool that opens files (never
// holding one of Node's four worker threads), and a link swapped in after the path was checked is
// never followed out of the workspace.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readFile, rename, symlink } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openRegularForWrite, readRegularFile } from "./regular-file.ts";
import { callTool, makeWorkspace, type TestWorkspace, toolContext } from "./test-support.ts";
import { createTools } from "./tools.ts";

let workspace: TestWorkspace;

beforeEach(async () => {
  workspace = await makeWorkspace({ "a.txt": "a\n", "dir/b.txt": "b\n" });
});

afterEach(async () => {
  await workspace.cleanup();
});

describe("named pipes", () => {
  it("are refused at once by write_file, read_file and edit_file, even all at the same time", async () => {
    for (const name of ["q1", "q2", "q3", "q4", "q5", "q6"]) {
      spawnSync("mkfifo", [path.join(workspace.root, name)]);
    }
    const tools = createTools();
    const started = Date.now();
    const call = (name: string, input: unknown) =>
      callTool(tools, name, input, toolContext(workspace.root));
    const results = await Promise.allSettled([
      ...["q1", "q2", "q3", "q4"].map((file) => call("write_file", { path: file, content: "x" })),
      call("read_file", { path: "q5" }),
      call("edit_file", { path: "q6", old_string: "a", new_string: "b" }),
    ]);
    for (const result of results) {
      expect(result.status).toBe("rejected");
      expect(String((result as PromiseRejectedResult).reason)).toMatch(
        /named pipe|not a regular file/,
      );
    }
    // Four blocked opens would have held every worker thread until something read the pipes.
    expect(await readFile(path.join(workspace.root, "a.txt"), "utf8")).toBe("a\n");
    expect(Date.now() - started).toBeLessThan(20_000);
  });
});

describe("a directory swapped for a link after the check", () => {
  it("is never followed: nothing is created or emptied outside", async () => {
    const root = workspace.root;
    // As if a concurrent command swapped dir/ for a link out after resolveInWorkspace checked it.
    await rename(path.join(root, "dir"), path.join(root, "dir.old"));
    await symlink(workspace.outside, path.join(root, "dir"));
    await expect(
      openRegularForWrite(path.join(root, "dir", "new.txt"), { root, relative: "dir/new.txt" }),
    ).rejects.toMatchObject({ code: "path_outside_workspace" });
    expect(existsSync(path.join(workspace.outside, "new.txt"))).toBe(false);
    await expect(
      openRegularForWrite(path.join(root, "dir", "secret.txt"), {
        root,
        relative: "dir/secret.txt",
      }),
    ).rejects.toMatchObject({ code: "path_outside_workspace" });
    expect(await readFile(path.join(workspace.outside, "secret.txt"), "utf8")).toBe(
      "outside secret\n",
    );
    await expect(
      readRegularFile(path.join(root, "dir", "secret.txt"), { root, relative: "dir/secret.txt" }),
    ).rejects.toMatchObject({ code: "path_outside_workspace" });
    await mkdir(path.join(root, "fine"));
    const handle = await openRegularForWrite(path.join(root, "fine", "c.txt"), {
      root,
      relative: "fine/c.txt",
    });
    await handle.close();
  });
});
