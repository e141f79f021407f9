// grep on ripgrep and on the Node fallback: the same output for the same search, and every limit.
import { execFileSync } from "node:child_process";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { ToolError } from "@gadget/agent";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callTool, git, makeWorkspace, type TestWorkspace, toolContext } from "./test-support.ts";
import { createTools } from "./tools.ts";

let workspace: TestWorkspace;

const ripgrepInstalled = (() => {
  try {
    execFileSync("rg", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

beforeAll(async () => {
  const many = Array.from({ length: 400 }, (_, index) => `needle ${index}`).join("\n");
  workspace = await makeWorkspace({
    ".gitignore": "dist/\n",
    "src/app.ts":
      "import { load } from './load';\n\nexport function start() {\n  return load();\n}\n",
    "src/load.ts": "export function load() {\n  // TODO: cache\n  return 1;\n}\n",
    "src/view.tsx": "export const View = () => <div>Load</div>;\n",
    "docs/guide.md": "Call load() first.\n",
    "dist/bundle.js": "function load(){}\n",
    "node_modules/pkg/index.js": "function load(){}\n",
    ".github/ci.yml": "run: load\n",
    "many.txt": `${many}\n`,
    "a-b/x.txt": "order\n",
    "a/x.txt": "order\n",
  });
  git(workspace.root, "init", "-q");
  await writeFile(
    path.join(workspace.root, "binary.dat"),
    Buffer.concat([Buffer.from("load\0"), Buffer.alloc(100)]),
  );
  await writeFile(
    path.join(workspace.root, "minified.js"),
    `${"a".repeat(3000)}load()${"b".repeat(3000)}\n`,
  );
});

afterAll(() => workspace.cleanup());

const engines = [
  ["node", createTools({ ripgrepPath: null })],
  ...(ripgrepInstalled ? [["ripgrep", createTools()] as const] : []),
] as const;

for (const [engine, tools] of engines) {
  describe(`grep (${engine})`, () => {
    const grep = (input: Record<string, unknown>) =>
      callTool(tools, "grep", input, toolContext(workspace.root));

    it("finds matching lines as path:line:text, skipping ignored, node_modules and binary files", async () => {
      const result = await grep({ pattern: "function load" });
      expect(result.output).toBe(
        "Found 1 match in 1 file.\n\nsrc/load.ts:1:export function load() {",
      );
      expect(result.data).toMatchObject({ engine, matches: 1 });
      const all = await grep({ pattern: "load\\(" });
      expect(all.output.split("\n").slice(2)).toEqual([
        "docs/guide.md:1:Call load() first.",
        expect.stringMatching(
          /^minified\.js:1:\[\d+ characters\]…a+load\(\)b+…\[\d+ characters\]$/,
        ),
        "src/app.ts:4:  return load();",
        "src/load.ts:1:export function load() {",
      ]);
    });

    it("searches hidden directories but not .git", async () => {
      const result = await grep({ pattern: "^run: load" });
      expect(result.output).toContain(".github/ci.yml:1:run: load");
      const head = await grep({ pattern: "ref: refs" });
      expect(head.output).toContain("No matches");
    });

    it("ignores case, filters by include and narrows by path", async () => {
      const result = await grep({ pattern: "LOAD", ignore_case: true, include: "*.tsx" });
      expect(result.output.split("\n").slice(2)).toEqual([
        "src/view.tsx:1:export const View = () => <div>Load</div>;",
      ]);
      const inFile = await grep({ pattern: "return", path: "src/load.ts" });
      expect(inFile.output.split("\n").slice(2)).toEqual(["src/load.ts:3:  return 1;"]);
      const braces = await grep({ pattern: "load", include: "*.{md,yml}" });
      expect(braces.output.split("\n").slice(2)).toEqual([
        ".github/ci.yml:1:run: load",
        "docs/guide.md:1:Call load() first.",
      ]);
    });

    it("shows context lines and separates groups", async () => {
      const result = await grep({ pattern: "TODO|return load", context: 1, path: "src" });
      expect(result.output.split("\n").slice(2)).toEqual([
        "src/app.ts-3-export function start() {",
        "src/app.ts:4:  return load();",
        "src/app.ts-5-}",
        "--",
        "src/load.ts-1-export function load() {",
        "src/load.ts:2:  // TODO: cache",
        "src/load.ts-3-  return 1;",
      ]);
    });

    it("searches an ignored directory when asked for it by path", async () => {
      const result = await grep({ pattern: "function load", path: "dist" });
      expect(result.output.split("\n").slice(2)).toEqual(["dist/bundle.js:1:function load(){}"]);
    });

    it("orders files the same way on both engines", async () => {
      const result = await grep({ pattern: "^order$" });
      expect(result.output.split("\n").slice(2)).toEqual(["a/x.txt:1:order", "a-b/x.txt:1:order"]);
    });

    it("stops at 300 matches and says to narrow the search", async () => {
      const result = await grep({ pattern: "needle \\d+" });
      const lines = result.output.split("\n");
      expect(lines[0]).toBe(
        "Showing the first 300 matches in 1 file; there are more. Narrow your search with path, include or a more specific pattern.",
      );
      expect(lines.slice(2)).toHaveLength(300);
      expect(result.data).toMatchObject({ truncated: true, matches: 300 });
    });

    it("says when nothing matches", async () => {
      const result = await grep({ pattern: "no such text anywhere" });
      expect(result.output).toBe("No matches for /no such text anywhere/.");
    });

    it("explains an invalid pattern", async () => {
      const error = await grep({ pattern: "load(" }).then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      expect(error).toBeInstanceOf(ToolError);
      expect((error as ToolError).code).toBe("bad_pattern");
      expect((error as ToolError).message).toContain("Escape special characters");
    });

    it("suggests a path that exists", async () => {
      await expect(grep({ pattern: "x", path: "scr" })).rejects.toThrow(/Did you mean: src/);
    });
  });
}

describe("grep engine choice", () => {
  it("falls back to Node when the configured ripgrep does not exist", async () => {
    const tools = createTools({ ripgrepPath: "/nonexistent/rg" });
    const result = await callTool(tools, "grep", { pattern: "TODO" }, toolContext(workspace.root));
    expect(result.data).toMatchObject({ engine: "node", matches: 1 });
  });

  it("falls back to Node when rg is not on PATH", async () => {
    const tools = createTools({ env: { PATH: "/nonexistent" } });
    const result = await callTool(tools, "grep", { pattern: "TODO" }, toolContext(workspace.root));
    expect(result.data).toMatchObject({ engine: "node" });
  });
});
