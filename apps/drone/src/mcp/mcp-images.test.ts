// An MCP server's image result (the fixture's `screenshot`, a real server over stdio): an image
// part for a model that takes images, only the `[image: …]` line for one that does not.
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { makeTempDir } from "@gadget/testkit";
import { bundleMcpFixtureServer } from "@gadget/testkit/mcp";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resultImages } from "./mcp-images.ts";
import { mcpTool } from "./mcp-tools.ts";

const documentStub = { update: () => ({}), sections: {} };
let client: Client;
let workspace: string;

beforeAll(async () => {
  workspace = await makeTempDir("gadget-mcp-images-");
  const script = path.join(workspace, "fixture.mjs");
  await writeFile(script, await bundleMcpFixtureServer());
  client = new Client({ name: "test", version: "1" });
  await client.connect(
    new StdioClientTransport({ command: process.execPath, args: [script], cwd: workspace }),
  );
}, 60_000);
afterAll(async () => {
  await client?.close();
});

async function screenshot(acceptsImages: boolean) {
  const listed = await client.listTools();
  const described = listed.tools.find((tool) => tool.name === "screenshot");
  if (!described) throw new Error("the fixture has no screenshot tool");
  const tool = mcpTool(
    "tracker",
    described,
    "mcp__tracker__screenshot",
    async (name, args) => (await client.callTool({ name, arguments: args })) as CallToolResult,
    [],
  );
  return tool.execute(
    {},
    {
      signal: new AbortController().signal,
      workspace,
      callId: "c1",
      document: documentStub,
      acceptsImages,
    },
  );
}

describe("MCP image results", () => {
  it("reach a model that takes images as images", async () => {
    const result = await screenshot(true);
    expect(result.output).toBe("the screen:\n[image: image/png, 68 bytes]");
    expect(result.images).toEqual([
      { mediaType: "image/png", data: expect.stringMatching(/^iVBOR/) },
    ]);
  });

  it("stay words for a model that takes none", async () => {
    const result = await screenshot(false);
    expect(result.output).toBe("the screen:\n[image: image/png, 68 bytes]");
    expect(result.images).toBeUndefined();
  });

  it("are dropped when a server's image is not what it claims", () => {
    const hostile: CallToolResult = {
      content: [
        {
          type: "image",
          mimeType: "image/png",
          data: Buffer.from("<svg onload=x>").toString("base64"),
        },
        {
          type: "image",
          mimeType: "image/svg+xml",
          data: Buffer.from("<svg/>").toString("base64"),
        },
        { type: "image", mimeType: "image/png", data: "%%%not base64%%%" },
      ],
    };
    expect(resultImages(hostile, { acceptsImages: true })).toEqual({});
  });
});
