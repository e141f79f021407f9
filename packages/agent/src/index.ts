// @gadget/agent: the Agentic Workflow Loop.
export * from "./tool.ts";
