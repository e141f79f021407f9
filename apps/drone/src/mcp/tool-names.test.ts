// MCP tool names as the model gets them: safe characters, at most 64, each once.
import { describe, expect, it } from "vitest";
import { MAX_TOOL_NAME_LENGTH, mcpToolName } from "./tool-names.ts";

describe("mcpToolName", () => {
  it("prefixes the server and replaces characters providers refuse", () => {
    const taken = new Set<string>();
    expect(mcpToolName("github", "create_issue", taken)).toBe("mcp__github__create_issue");
    expect(mcpToolName("github", "issues.search", taken)).toBe("mcp__github__issues_search");
    expect(mcpToolName("docs", "ünï cödé/tool:1", taken)).toBe("mcp__docs___n__c_d__tool_1");
    expect(mcpToolName("docs", "", taken)).toBe("mcp__docs__tool");
  });

  it("cuts long names to 64 characters and numbers clashes", () => {
    const taken = new Set<string>();
    const long = "a".repeat(100);
    const first = mcpToolName("server", long, taken);
    const second = mcpToolName("server", `${long}b`, taken);
    const third = mcpToolName("server", `${long}c`, taken);
    expect(first).toHaveLength(MAX_TOOL_NAME_LENGTH);
    expect(second).toHaveLength(MAX_TOOL_NAME_LENGTH);
    expect(second.endsWith("_2")).toBe(true);
    expect(third.endsWith("_3")).toBe(true);
    expect(new Set([first, second, third]).size).toBe(3);
    // Two tools that only differ in unsafe characters stay apart too.
    expect(mcpToolName("s", "a.b", taken)).toBe("mcp__s__a_b");
    expect(mcpToolName("s", "a/b", taken)).toBe("mcp__s__a_b_2");
    for (const name of taken) expect(name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
  });
});
