// Splitting a changes report's unified diff into files.
import { describe, expect, it } from "vitest";
import { splitDiff } from "./unified-diff.ts";

const gitDiff = [
  "diff --git a/src/a.ts b/src/a.ts",
  "index 111..222 100644",
  "--- a/src/a.ts",
  "+++ b/src/a.ts",
  "@@ -1,3 +1,3 @@",
  " const a = 1;",
  "--- not a header, a removed line that starts with dashes",
  "+const b = 2;",
  " export { a };",
  "diff --git a/new.md b/new.md",
  "new file mode 100644",
  "--- /dev/null",
  "+++ b/new.md",
  "@@ -0,0 +1,2 @@",
  "+# New",
  "+text",
  "diff --git a/logo.png b/logo.png",
  "Binary files a/logo.png and b/logo.png differ",
  "",
].join("\n");

describe("splitDiff", () => {
  it("gives each file of a git diff its lines and counts", () => {
    const files = splitDiff(gitDiff);
    expect(files.map((file) => [file.path, file.additions, file.deletions, file.binary])).toEqual([
      ["src/a.ts", 1, 1, false],
      ["new.md", 2, 0, false],
      ["logo.png", 0, 0, true],
    ]);
    expect(files[0]?.lines.filter((line) => line.kind === "del")[0]?.text).toMatch(
      /^--- not a header/,
    );
  });

  it("reads plain unified diffs without git headers", () => {
    const files = splitDiff(
      [
        "--- a/x.txt",
        "+++ b/x.txt",
        "@@ -1 +1 @@",
        "-old",
        "+new",
        "--- a/y.txt",
        "+++ b/y.txt",
        "@@ -1 +1 @@",
        "-1",
        "+2",
      ].join("\n"),
    );
    expect(files.map((file) => file.path)).toEqual(["x.txt", "y.txt"]);
  });

  it("gives nothing for an empty diff", () => {
    expect(splitDiff("")).toEqual([]);
  });
});
