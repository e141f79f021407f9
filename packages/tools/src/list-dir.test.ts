// list_dir and glob: the tree as git sees it (.gitignore honoured, .git and node_modules skipped), capped.
import { mkdir, symlink } from "node:fs/promises";
import path from "node:path";
import { ToolError } from "@gadget/agent";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callTool, git, makeWorkspace, type TestWorkspace, toolContext } from "./test-support.ts";
import { createTools } from "./tools.ts";

let workspace: TestWorkspace;
const tools = createTools();

beforeAll(async () => {
  const many = Object.fromEntries(
    Array.from({ length: 30 }, (_, index) => [
      `many/file-${String(index).padStart(2, "0")}.txt`,
      "x",
    ]),
  );
  workspace = await makeWorkspace({
    ".gitignore": "dist/\n*.log\n!keep.log\n",
    "README.md": "# demo\n",
    "src/index.ts": "",
    "src/util/strings.ts": "",
    "src/util/strings.test.ts": "",
    "src/.gitignore": "generated.ts\n",
    "src/generated.ts": "",
    "dist/bundle.js": "",
    "debug.log": "",
    "keep.log": "",
    "node_modules/pkg/index.js": "",
    ".github/workflows/ci.yml": "",
    ...many,
  });
  git(workspace.root, "init", "-q");
  await mkdir(path.join(workspace.root, "empty-dir"));
  await symlink("src/index.ts", path.join(workspace.root, "index-link.ts"));
});

afterAll(() => workspace.cleanup());

const call = (name: string, input: Record<string, unknown>, toolList = tools) =>
  callTool(toolList, name, input, toolContext(workspace.root));

describe("list_dir", () => {
  it("shows a tree two levels deep without ignored files, .git or node_modules", async () => {
    const result = await call("list_dir", {});
    const lines = result.output.split("\n");
    expect(lines[0]).toBe("./");
    expect(lines).toContain("src/");
    expect(lines).toContain("  index.ts");
    expect(lines).toContain("  util/");
    expect(lines).not.toContain("    strings.ts");
    expect(lines).toContain(".github/");
    expect(lines).toContain("keep.log");
    expect(lines).toContain("index-link.ts -> src/index.ts");
    expect(result.output).not.toMatch(/dist|debug\.log|node_modules|\.git\/$|generated\.ts/m);
    expect(result.summary).toMatch(/^Listed \. \(\d+ entries\)$/);
  });

  it("goes deeper on request and lists a subdirectory", async () => {
    const result = await call("list_dir", { path: "src", depth: 3 });
    expect(result.output.split("\n")).toEqual([
      "src/",
      ".gitignore",
      "index.ts",
      "util/",
      "  strings.test.ts",
      "  strings.ts",
    ]);
  });

  it("says when it cuts the listing, keeping the top level whole", async () => {
    const small = createTools({ maxListEntries: 15 });
    const result = await call("list_dir", {}, small);
    expect(result.output).toContain("Listing cut at 15 entries");
    expect(result.output).toContain("README.md");
    expect(result.output).toMatch(/many\/ …/);
    expect(result.data).toMatchObject({ truncated: true, entries: 15 });
  });

  it("lists an ignored directory when asked for it by path", async () => {
    expect((await call("list_dir", { path: "dist" })).output).toBe("dist/\nbundle.js");
    expect((await call("glob", { pattern: "*.js", path: "dist" })).output).toBe("dist/bundle.js");
  });

  it("reports an empty directory, a file and a missing path", async () => {
    expect((await call("list_dir", { path: "empty-dir" })).output).toContain("(empty directory)");
    await expect(call("list_dir", { path: "README.md" })).rejects.toThrow(/read_file/);
    await expect(call("list_dir", { path: "scr" })).rejects.toThrow(/Did you mean: src/);
  });
});

describe("glob", () => {
  it("matches with standard glob semantics and honours .gitignore", async () => {
    const result = await call("glob", { pattern: "**/*.ts" });
    expect(result.output.split("\n")).toEqual([
      "index-link.ts",
      "src/index.ts",
      "src/util/strings.test.ts",
      "src/util/strings.ts",
    ]);
    const top = await call("glob", { pattern: "*.md" });
    expect(top.output).toBe("README.md");
    const braces = await call("glob", { pattern: "src/**/*.{test.ts,md}" });
    expect(braces.output).toBe("src/util/strings.test.ts");
  });

  it("searches under a path and finds dot directories", async () => {
    const result = await call("glob", { pattern: "*.ts", path: "src/util" });
    expect(result.output.split("\n")).toEqual(["src/util/strings.test.ts", "src/util/strings.ts"]);
    expect((await call("glob", { pattern: "**/*.yml" })).output).toBe(".github/workflows/ci.yml");
  });

  it("skips node_modules unless the pattern goes into it", async () => {
    expect((await call("glob", { pattern: "**/*.js" })).output).toContain("No files match");
    expect((await call("glob", { pattern: "node_modules/pkg/*.js" })).output).toBe(
      "node_modules/pkg/index.js",
    );
  });

  it("caps the number of results and says so", async () => {
    const small = createTools({ maxGlobResults: 10 });
    const result = await call("glob", { pattern: "many/*.txt" }, small);
    expect(result.output.split("\n").slice(0, 10)).toHaveLength(10);
    expect(result.output).toContain(
      "Showing the first 10 files; there are more. Narrow the pattern or the path.",
    );
  });

  it("hints at ** when a pattern without a slash finds nothing", async () => {
    const result = await call("glob", { pattern: "strings.ts" });
    expect(result.output).toContain('try "**/strings.ts"');
  });

  it("refuses a path that is not a directory", async () => {
    await expect(call("glob", { pattern: "*", path: "README.md" })).rejects.toBeInstanceOf(
      ToolError,
    );
  });
});
