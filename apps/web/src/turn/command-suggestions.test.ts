// Which commands the composer's `/` list offers for what is typed.
import type { ProjectCommand } from "@gadget/protocol";
import { describe, expect, it } from "vitest";
import { matchingCommands } from "./command-suggestions.tsx";

const command = (name: string): ProjectCommand => ({ name, description: "", source: "file" });
const commands = ["review", "release", "mcp__tracker__review_pr", "deploy"].map(command);
const names = (prompt: string) => matchingCommands(prompt, commands).map((found) => found.name);

describe("the composer's / list", () => {
  it("offers names starting with what is typed first, then those containing it", () => {
    expect(names("/")).toEqual(["review", "release", "mcp__tracker__review_pr", "deploy"]);
    expect(names("/re")).toEqual(["review", "release", "mcp__tracker__review_pr"]);
    expect(names("/REV")).toEqual(["review", "mcp__tracker__review_pr"]);
  });

  it("offers nothing once the name is followed by a space, or for what is no name", () => {
    expect(names("/review ")).toEqual([]);
    expect(names("review")).toEqual([]);
    expect(names("/src/app.ts")).toEqual([]);
    expect(names("/zzz")).toEqual([]);
  });

  it("shows at most eight", () => {
    const many = Array.from({ length: 20 }, (_, index) => command(`c${index}`));
    expect(matchingCommands("/c", many)).toHaveLength(8);
  });
});
