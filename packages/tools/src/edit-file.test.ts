// write_file and edit_file: creating, overwriting, exact and whitespace-tolerant edits, and their limits.
import { readFile, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { ToolError } from "@gadget/agent";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyEdit } from "./edit-file.ts";
import { callTool, makeWorkspace, type TestWorkspace, toolContext } from "./test-support.ts";
import { createTools } from "./tools.ts";

let workspace: TestWorkspace;
const tools = createTools({ maxWriteBytes: 1000 });

beforeAll(async () => {
  workspace = await makeWorkspace({});
});

afterAll(() => workspace.cleanup());

const call = (name: string, input: Record<string, unknown>) =>
  callTool(tools, name, input, toolContext(workspace.root));
const content = (file: string) => readFile(path.join(workspace.root, file), "utf8");

async function failure(name: string, input: Record<string, unknown>): Promise<ToolError> {
  const error = await call(name, input).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(ToolError);
  return error as ToolError;
}

describe("write_file", () => {
  it("creates a file and its parent directories", async () => {
    const result = await call("write_file", { path: "src/deep/new.ts", content: "a\nb\n" });
    expect(result.output).toBe("Created src/deep/new.ts (2 lines, 4 B).");
    expect(result.summary).toBe("Created src/deep/new.ts (2 lines)");
    expect(await content("src/deep/new.ts")).toBe("a\nb\n");
  });

  it("overwrites an existing file and keeps its mode", async () => {
    await writeFile(path.join(workspace.root, "run.sh"), "#!/bin/sh\n", { mode: 0o755 });
    const result = await call("write_file", { path: "run.sh", content: "#!/bin/sh\necho hi\n" });
    expect(result.summary).toBe("Overwrote run.sh (2 lines)");
    expect((await stat(path.join(workspace.root, "run.sh"))).mode & 0o777).toBe(0o755);
  });

  it("refuses content over the size cap", async () => {
    const error = await failure("write_file", { path: "huge.txt", content: "x".repeat(1001) });
    expect(error.code).toBe("too_large");
    await expect(content("huge.txt")).rejects.toThrow();
  });

  it("refuses a directory and a file used as a directory", async () => {
    await failure("write_file", { path: "src", content: "" });
    await call("write_file", { path: "plain.txt", content: "" });
    const error = await failure("write_file", { path: "plain.txt/child.txt", content: "" });
    expect(error.message).toContain("not a directory");
  });

  it("describes itself for an approval card", () => {
    const tool = tools.find((candidate) => candidate.name === "write_file");
    expect(tool?.describe?.({ path: "src/app.ts", content: "a\nb\nc\n" })).toBe(
      "Write src/app.ts (3 lines)",
    );
  });
});

describe("edit_file", () => {
  const source =
    "function add(a, b) {\n  return a + b;\n}\n\nfunction sub(a, b) {\n  return a - b;\n}\n";

  it("replaces a unique exact match and shows a numbered snippet", async () => {
    await writeFile(path.join(workspace.root, "math.js"), source);
    const result = await call("edit_file", {
      path: "math.js",
      old_string: "  return a - b;",
      new_string: "  return a - b - 0;",
    });
    expect(await content("math.js")).toContain("return a - b - 0;");
    expect(result.output).toContain("Edited math.js: replaced 1 occurrence at line 6.");
    expect(result.output).toContain("     6\t  return a - b - 0;");
    expect(result.output).toContain("     5\tfunction sub(a, b) {");
    expect(result.summary).toBe("Edited math.js (replaced 1 occurrence at line 6)");
  });

  it("refuses an ambiguous match and says how many there were", async () => {
    await writeFile(path.join(workspace.root, "dup.js"), source);
    const error = await failure("edit_file", {
      path: "dup.js",
      old_string: "(a, b) {",
      new_string: "(a, b, c) {",
    });
    expect(error.code).toBe("ambiguous_edit");
    expect(error.message).toContain("found 2 times");
    expect(error.message).toContain("replace_all=true");
    expect(await content("dup.js")).toBe(source);
  });

  it("replaces every occurrence with replace_all", async () => {
    await writeFile(path.join(workspace.root, "all.js"), source);
    const result = await call("edit_file", {
      path: "all.js",
      old_string: "(a, b)",
      new_string: "(left, right)",
      replace_all: true,
    });
    expect(result.output).toContain("replaced 2 occurrences (first at line 1)");
    expect(await content("all.js")).not.toContain("(a, b)");
  });

  it("falls back to whitespace-tolerant matching only when it finds one place", async () => {
    await writeFile(path.join(workspace.root, "ws.js"), source);
    const result = await call("edit_file", {
      path: "ws.js",
      old_string: "function add(a, b) {\n    return a + b;\n}",
      new_string: "function add(a, b) {\n  return b + a;\n}",
    });
    expect(result.output).toContain("(matched ignoring whitespace differences)");
    expect(await content("ws.js")).toBe(source.replace("a + b", "b + a"));
    const error = await failure("edit_file", {
      path: "ws.js",
      old_string: "function sub(a,b)",
      new_string: "x",
    });
    expect(error.message).toContain("0 matches");
  });

  it("refuses a whitespace-tolerant match that is ambiguous", async () => {
    await writeFile(path.join(workspace.root, "twice.js"), "let a  = 1;\nlet a   = 1;\n");
    const error = await failure("edit_file", {
      path: "twice.js",
      old_string: "let a = 1;",
      new_string: "let a = 2;",
    });
    expect(error.message).toContain("matches 2 places");
  });

  it("says when nothing matches and where the first line is", async () => {
    await writeFile(path.join(workspace.root, "miss.js"), source);
    const error = await failure("edit_file", {
      path: "miss.js",
      old_string: "function sub(a, b) {\n  return a * b;",
      new_string: "x",
    });
    expect(error.code).toBe("edit_not_found");
    expect(error.message).toContain("0 matches");
    expect(error.message).toContain("matches line 5");
  });

  it("edits files with Windows line endings", async () => {
    await writeFile(path.join(workspace.root, "crlf.txt"), "one\r\ntwo\r\nthree\r\n");
    await call("edit_file", { path: "crlf.txt", old_string: "one\ntwo", new_string: "1\n2" });
    expect(await content("crlf.txt")).toBe("1\r\n2\r\nthree\r\n");
  });

  it("refuses a missing file, an empty old_string and a no-op", async () => {
    expect(
      (await failure("edit_file", { path: "nope.js", old_string: "a", new_string: "b" })).message,
    ).toContain("write_file");
    await writeFile(path.join(workspace.root, "same.js"), source);
    await failure("edit_file", { path: "same.js", old_string: "", new_string: "b" });
    await failure("edit_file", { path: "same.js", old_string: "add", new_string: "add" });
  });

  it("refuses an edit whose result is over the size cap", async () => {
    await writeFile(path.join(workspace.root, "grow.txt"), "seed\n");
    const error = await failure("edit_file", {
      path: "grow.txt",
      old_string: "seed",
      new_string: "y".repeat(2000),
    });
    expect(error.code).toBe("too_large");
    expect(await content("grow.txt")).toBe("seed\n");
  });

  it("treats $ in new_string literally", () => {
    expect(applyEdit("price = 1\n", "1", "$& $1 $$", false, "x").content).toBe(
      "price = $& $1 $$\n",
    );
  });
});
