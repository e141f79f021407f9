// Checks on the repository as a whole: it stands alone, so no tracked file points a reader at
// documents kept outside it (docs/decisions/0022-self-contained-docs.md).
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { findRepoRoot } from "@gadget/services";
import { describe, expect, it } from "vitest";

const repoRoot = findRepoRoot();
const thisFile = path.relative(repoRoot, import.meta.filename);

/** References to documents that are not in the repository (written split, so they match only there). */
const outsideReferences: Array<[string, RegExp]> = [
  ["the product contract file", new RegExp(["SPEC", "\\.md"].join(""))],
  ["the product contract by name", new RegExp(["\\bSP", "EC\\b"].join(""))],
  ["a seed document", new RegExp(["\\bseeds?", "\\s+0\\d\\d"].join(""), "i")],
  ["the seed folder", new RegExp(["seeds", "/"].join(""))],
  ["the shared folder beside the repository", new RegExp(["\\.\\./sha", "red"].join(""))],
];

function trackedFiles(): string[] {
  return execFileSync("git", ["ls-files", "-z"], { cwd: repoRoot, encoding: "utf8" })
    .split("\0")
    .filter((file) => file && file !== thisFile);
}

describe("the repository", () => {
  it("refers to no document outside it", () => {
    const found: string[] = [];
    for (const file of trackedFiles()) {
      let text: string;
      try {
        text = readFileSync(path.join(repoRoot, file), "utf8");
      } catch {
        continue; // deleted in the work tree, not yet staged
      }
      if (text.includes("\0")) continue; // binary
      text.split("\n").forEach((line, index) => {
        for (const [what, pattern] of outsideReferences) {
          if (pattern.test(line)) found.push(`${file}:${index + 1}: ${what}: ${line.trim()}`);
        }
      });
    }
    expect(found).toEqual([]);
  });

  it("names one release: the server's and gadget-drone's versions are the protocol's RELEASE_VERSION", () => {
    // A drone of another protocol is told to install this release: it must be the one published.
    const source = readFileSync(path.join(repoRoot, "packages/protocol/src/version.ts"), "utf8");
    const release = /RELEASE_VERSION = "([^"]+)"/.exec(source)?.[1];
    const versionOf = (file: string) =>
      (JSON.parse(readFileSync(path.join(repoRoot, file), "utf8")) as { version: string }).version;
    expect(release).toBeDefined();
    expect(versionOf("apps/drone/package.json")).toBe(release);
    expect(versionOf("apps/server/package.json")).toBe(release);
  });
});
