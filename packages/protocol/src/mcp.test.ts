// MCP server names and the tool names built from them.
import { describe, expect, it } from "vitest";
import { mcpServerNameSchema, parseMcpToolName } from "./mcp.ts";

describe("MCP names", () => {
  it("takes lowercase names with single underscores, and reads the server back from a tool name", () => {
    for (const name of ["github", "my-server", "a_b", "x1"]) {
      expect(mcpServerNameSchema.safeParse(name).success, name).toBe(true);
    }
    for (const name of ["", "GitHub", "a__b", "_a", "a b", "x".repeat(33)]) {
      expect(mcpServerNameSchema.safeParse(name).success, name).toBe(false);
    }
    expect(parseMcpToolName("mcp__github__create_issue")).toEqual({
      server: "github",
      tool: "create_issue",
    });
    expect(parseMcpToolName("mcp__a_b__c__d")).toEqual({ server: "a_b", tool: "c__d" });
    expect(parseMcpToolName("read_file")).toBeNull();
  });
});
