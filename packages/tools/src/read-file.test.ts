// read_file: numbered lines and every limit (lines, line length, bytes, binary, missing paths).
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { ToolError } from "@gadget/agent";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callTool, makeWorkspace, type TestWorkspace, toolContext } from "./test-support.ts";
import { createTools } from "./tools.ts";

let workspace: TestWorkspace;
const tools = createTools();

const numbered = (count: number) =>
  Array.from({ length: count }, (_, index) => `line ${index + 1}`).join("\n");

beforeAll(async () => {
  workspace = await makeWorkspace({
    "src/app.ts": "const a = 1;\nconst b = 2;\n",
    "big.txt": `${numbered(5000)}\n`,
    "crlf.txt": "one\r\ntwo\r\n",
    "empty.txt": "",
    "no-newline.txt": "last line without newline",
    "src/components/Button.tsx": "export {};\n",
  });
  await writeFile(
    path.join(workspace.root, "image.bin"),
    Buffer.from([0x89, 0x50, 0x00, 0x01, 0x02]),
  );
  await writeFile(path.join(workspace.root, "long.txt"), `${"x".repeat(5000)}\nshort\n`);
  await writeFile(
    path.join(workspace.root, "wide.txt"),
    `${Array.from({ length: 100 }, () => "y".repeat(1500)).join("\n")}\n`,
  );
});

afterAll(() => workspace.cleanup());

const read = (input: Record<string, unknown>) =>
  callTool(tools, "read_file", input, toolContext(workspace.root));

async function readError(input: Record<string, unknown>): Promise<ToolError> {
  const error = await read(input).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(ToolError);
  return error as ToolError;
}

describe("read_file", () => {
  it("returns numbered lines and a summary", async () => {
    const result = await read({ path: "src/app.ts" });
    expect(result.output).toBe("     1\tconst a = 1;\n     2\tconst b = 2;");
    expect(result.summary).toBe("Read src/app.ts (2 lines)");
  });

  it("stops at 2,000 lines and says which offset continues", async () => {
    const result = await read({ path: "big.txt" });
    const lines = result.output.split("\n");
    expect(lines[1999]).toBe("  2000\tline 2000");
    expect(result.output).not.toContain("line 2001");
    expect(result.output).toContain("Showing lines 1-2000 of 5000");
    expect(result.output).toContain("Use offset=2001 to continue.");
  });

  it("reads from an offset with a limit", async () => {
    const result = await read({ path: "big.txt", offset: 4999, limit: 10 });
    expect(result.output.split("\n").slice(0, 2)).toEqual([
      "  4999\tline 4999",
      "  5000\tline 5000",
    ]);
    expect(result.output).toContain("end of file");
    const middle = await read({ path: "big.txt", offset: 10, limit: 3 });
    expect(middle.output).toContain("Use offset=13 to continue.");
    expect(middle.summary).toBe("Read big.txt (lines 10-12 of 5000)");
  });

  it("refuses an offset past the end", async () => {
    const error = await readError({ path: "src/app.ts", offset: 50 });
    expect(error.message).toContain("has 2 lines");
  });

  it("cuts lines longer than 2,000 characters", async () => {
    const result = await read({ path: "long.txt" });
    const [first, second] = result.output.split("\n");
    expect(first).toContain(`${"x".repeat(2000)}… [3000 more characters]`);
    expect(second).toBe("     2\tshort");
  });

  it("stops at the byte cap and says which offset continues", async () => {
    const result = await read({ path: "wide.txt" });
    expect(Buffer.byteLength(result.output)).toBeLessThan(64 * 1024 + 500);
    expect(result.output).toMatch(/output limit was reached\. Use offset=\d+ to continue/);
  });

  it("strips Windows line endings and reads a last line without newline", async () => {
    expect((await read({ path: "crlf.txt" })).output).toBe("     1\tone\n     2\ttwo");
    expect((await read({ path: "no-newline.txt" })).output).toBe(
      "     1\tlast line without newline",
    );
  });

  it("says when a file is empty", async () => {
    expect((await read({ path: "empty.txt" })).output).toContain("is empty");
  });

  it("refuses binary files", async () => {
    const error = await readError({ path: "image.bin" });
    expect(error.code).toBe("binary_file");
    expect(error.message).toContain("binary file");
  });

  it("suggests paths for a missing file", async () => {
    const typo = await readError({ path: "src/ap.ts" });
    expect(typo.code).toBe("not_found");
    expect(typo.message).toContain("Did you mean: src/app.ts");
    const wrongDirectory = await readError({ path: "components/Button.tsx" });
    expect(wrongDirectory.message).toContain("src/components/Button.tsx");
    const wrongExtension = await readError({ path: "src/app.js" });
    expect(wrongExtension.message).toContain("src/app.ts");
  });

  it("points directories to list_dir", async () => {
    const error = await readError({ path: "src" });
    expect(error.message).toContain("list_dir");
  });
});
