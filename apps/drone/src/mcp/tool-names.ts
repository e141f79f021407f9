// The names MCP tools get before the model: `mcp__<server>__<tool>` in the characters and length
// every provider takes (`[a-zA-Z0-9_-]`, at most 64), each name once.

/** Longest tool name providers accept (OpenAI's function names). */
export const MAX_TOOL_NAME_LENGTH = 64;

/**
 * The model-facing name of `tool` on `server`, not yet in `taken` (which it joins): characters
 * outside `[a-zA-Z0-9_-]` become `_`, a long name is cut, a clash gets `_2`, `_3`, ….
 * @example mcpToolName("github", "issues.create", new Set()) // "mcp__github__issues_create"
 */
export function mcpToolName(server: string, tool: string, taken: Set<string>): string {
  const safe = (text: string) => text.replace(/[^a-zA-Z0-9_-]/g, "_");
  const base = `mcp__${safe(server)}__${safe(tool) || "tool"}`.slice(0, MAX_TOOL_NAME_LENGTH);
  let name = base;
  for (let attempt = 2; taken.has(name); attempt++) {
    const suffix = `_${attempt}`;
    name = `${base.slice(0, MAX_TOOL_NAME_LENGTH - suffix.length)}${suffix}`;
  }
  taken.add(name);
  return name;
}
