// read_file of an image: the picture for a model that takes images, a note for one that does not,
// and what is not an image (a PNG's name on text, an oversized picture) handled as such.
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { ToolError } from "@gadget/agent";
import { maxImageBytes } from "@gadget/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callTool, makeWorkspace, type TestWorkspace, toolContext } from "./test-support.ts";
import { createTools } from "./tools.ts";

/** A 16×16 red PNG. */
const png = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAIAAACQkWg2AAAAFklEQVR42mP4z8BAEmIY1TCqYfhqAACQ+f8B8u7oVwAAAABJRU5ErkJggg==",
  "base64",
);

let workspace: TestWorkspace;
const tools = createTools();

beforeAll(async () => {
  workspace = await makeWorkspace({ "docs/fake.png": "not an image at all\n" });
  await writeFile(path.join(workspace.root, "logo.png"), png);
  // A real PNG header followed by more bytes than read_file shows.
  await writeFile(
    path.join(workspace.root, "huge.png"),
    Buffer.concat([png, Buffer.alloc(maxImageBytes)]),
  );
});
afterAll(async () => {
  await workspace.cleanup();
});

const read = (file: string, acceptsImages: boolean) =>
  callTool(tools, "read_file", { path: file }, { ...toolContext(workspace.root), acceptsImages });

describe("read_file of an image", () => {
  it("gives a model that takes images the picture itself", async () => {
    const result = await read("logo.png", true);
    expect(result.ok).toBe(true);
    expect(result.output).toContain("logo.png is a PNG image");
    expect(result.summary).toBe("Read logo.png (PNG image, 79 B)");
    expect(result.images).toEqual([{ mediaType: "image/png", data: png.toString("base64") }]);
  });

  it("tells a model that takes no images what the file is, without its bytes", async () => {
    const result = await read("logo.png", false);
    expect(result.ok).toBe(true);
    expect(result.output).toContain("does not take images");
    expect(result.images).toBeUndefined();
  });

  it("sends nothing as an image that only has an image's name", async () => {
    const error = await read("docs/fake.png", true).catch((caught: unknown) => caught);
    expect((error as ToolError).code).toBe("binary_file");
  });

  it("refuses an image larger than a model is sent", async () => {
    const error = await read("huge.png", true).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ToolError);
    expect((error as ToolError).code).toBe("too_large");
    expect((error as ToolError).message).toContain("at most 2.0 MiB");
  });
});
