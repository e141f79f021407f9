// The tool set as the engine and the model see it, update_document, and the pre-enrichment sources.
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { toolJsonSchema } from "@gadget/agent";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { workspaceContextSources } from "./context-sources.ts";
import { callTool, git, makeWorkspace, type TestWorkspace, toolContext } from "./test-support.ts";
import { createTools } from "./tools.ts";

let workspace: TestWorkspace;

beforeEach(async () => {
  workspace = await makeWorkspace({ "src/index.ts": "export {};\n" });
});

afterEach(() => workspace.cleanup());

describe("createTools", () => {
  it("provides the documented tools with their permissions and parameters", () => {
    const tools = createTools();
    const shape = Object.fromEntries(
      tools.map((tool) => {
        const schema = toolJsonSchema(tool) as {
          properties: Record<string, unknown>;
          required?: string[];
        };
        return [
          tool.name,
          {
            permission: tool.permission,
            parameters: Object.keys(schema.properties),
            required: schema.required ?? [],
          },
        ];
      }),
    );
    expect(shape).toEqual({
      read_file: {
        permission: "read",
        parameters: ["path", "offset", "limit"],
        required: ["path"],
      },
      list_dir: { permission: "read", parameters: ["path", "depth"], required: [] },
      glob: { permission: "read", parameters: ["pattern", "path"], required: ["pattern"] },
      grep: {
        permission: "read",
        parameters: ["pattern", "path", "include", "ignore_case", "context"],
        required: ["pattern"],
      },
      write_file: {
        permission: "write",
        parameters: ["path", "content"],
        required: ["path", "content"],
      },
      edit_file: {
        permission: "write",
        parameters: ["path", "old_string", "new_string", "replace_all"],
        required: ["path", "old_string", "new_string"],
      },
      run_command: {
        permission: "write",
        parameters: ["command", "cwd", "timeout_ms"],
        required: ["command"],
      },
      update_document: { permission: "read", parameters: ["sections"], required: ["sections"] },
    });
    for (const tool of tools) expect(tool.description.length).toBeGreaterThan(80);
  });

  it("lets run_command outlive its longest timeout in the engine", () => {
    const runCommand = createTools().find((tool) => tool.name === "run_command");
    expect(runCommand?.timeoutMs).toBeGreaterThan(600_000);
  });
});

describe("update_document", () => {
  it("updates the living document and returns all of it", async () => {
    const context = toolContext(workspace.root);
    const tools = createTools();
    await callTool(tools, "update_document", { sections: { plan: "read the code" } }, context);
    const result = await callTool(
      tools,
      "update_document",
      { sections: { plan: "fix the bug", confidence: "medium" } },
      context,
    );
    expect(context.document.sections).toEqual({
      plan: "[Pass 1] read the code\n[Pass 1] fix the bug",
      confidence: "medium",
    });
    expect(result.output).toBe(
      "## plan\n[Pass 1] read the code\n[Pass 1] fix the bug\n\n## confidence\nmedium",
    );
    expect(result.summary).toBe("Updated document: plan, confidence");
    expect(result.data).toEqual({ sections: context.document.sections });
  });
});

describe("workspaceContextSources", () => {
  const load = async () => {
    const signal = new AbortController().signal;
    const results: Record<string, string | null> = {};
    for (const source of workspaceContextSources({ maxHeadLines: 3 })) {
      results[source.name] = await source.load({ signal, workspace: workspace.root });
    }
    return results;
  };

  it("says nothing about what is missing", async () => {
    const results = await load();
    expect(results.repository_tree).toContain("src/\n  index.ts");
    expect(results.readme).toBeNull();
    expect(results.git_status).toBeNull();
    expect(results.project_guidelines).toBeNull();
  });

  it("summarises the tree, README head, git status and agent guidelines", async () => {
    await writeFile(path.join(workspace.root, "README.md"), "# Demo\n\nLine 3\nLine 4\nLine 5\n");
    await writeFile(path.join(workspace.root, "AGENTS.md"), "Run pnpm test before committing.\n");
    await writeFile(path.join(workspace.root, "CONTRIBUTING.md"), "Use conventional commits.\n");
    git(workspace.root, "init", "-q");
    git(workspace.root, "add", "README.md");
    git(workspace.root, "commit", "-q", "-m", "readme first");
    const results = await load();
    expect(results.readme).toBe(
      "## README.md (head)\n# Demo\n\nLine 3\n… (2 more lines; read_file README.md for the rest)",
    );
    expect(results.git_status).toContain("## main");
    expect(results.git_status).toContain("?? AGENTS.md");
    expect(results.git_status).toContain("readme first");
    expect(results.project_guidelines).toContain("Run pnpm test before committing.");
    expect(results.project_guidelines).toContain("Use conventional commits.");
  });
});
