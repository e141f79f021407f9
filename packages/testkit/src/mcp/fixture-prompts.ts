// The fixture's prompts (commands `/mcp__<server>__<prompt>` in a turn): one with a required and an
// optional argument, one that fails.
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";

/** Registers the fixture's prompts on `server`. */
export function registerFixturePrompts(server: McpServer): void {
  server.registerPrompt(
    "summarize",
    {
      description: "Summarise the tracker's issues about a topic.",
      argsSchema: {
        topic: z.string().describe("what the issues are about"),
        style: z.string().optional().describe("how to write it"),
      },
    },
    ({ topic, style }) => ({
      messages: [
        {
          role: "user",
          content: {
            type: "text",
            text: `Summarise the tracker's open issues about "${topic}"${style ? ` in a ${style} style` : ""}.`,
          },
        },
      ],
    }),
  );
  server.registerPrompt("broken", { description: "Always fails." }, () => {
    throw new Error("the tracker's prompt store is down");
  });
}
