// What a prompt becomes: which prompts call a command, `$ARGUMENTS`, the `//` escape, and an MCP
// prompt's arguments taken from the words after its name.
import { describe, expect, it } from "vitest";
import { commandCall, literalPrompt, withArguments } from "./expansion.ts";
import { promptArguments } from "./mcp-prompts.ts";

describe("commands in a prompt", () => {
  it("calls a command only for / and a name followed by a space or the end", () => {
    expect(commandCall("/review src/app.ts")).toEqual({ name: "review", arguments: "src/app.ts" });
    expect(commandCall("  /release\n\nwith notes ")).toEqual({
      name: "release",
      arguments: "with notes",
    });
    expect(commandCall("/mcp__tracker__summarize")).toEqual({
      name: "mcp__tracker__summarize",
      arguments: "",
    });
    for (const text of ["/src/app.ts is broken", "//review", "review /x", "/", "/-x", "/a$b"])
      expect(commandCall(text), text).toBeNull();
  });

  it("sends //text as /text and anything else as typed", () => {
    expect(literalPrompt("//review is a word")).toBe("/review is a word");
    expect(literalPrompt("/src/app.ts is broken")).toBe("/src/app.ts is broken");
  });

  it("puts the arguments for every $ARGUMENTS, or on a last line when there is none", () => {
    expect(withArguments("Review $ARGUMENTS.\nThen test $ARGUMENTS.\n", "a.ts")).toBe(
      "Review a.ts.\nThen test a.ts.",
    );
    expect(withArguments("Cut a release.", "v2")).toBe("Cut a release.\n\nArguments: v2");
    expect(withArguments("Cut a release.", "")).toBe("Cut a release.");
    // `$&` and the like are text here, not replacement patterns.
    expect(withArguments("Say $ARGUMENTS", "$& $1")).toBe("Say $& $1");
  });
});

describe("an MCP prompt's arguments", () => {
  const prompt = {
    name: "summarize",
    arguments: [
      { name: "topic", required: true },
      { name: "style", required: false },
    ],
  };

  it("gives the words in order, the last argument the rest, a quoted phrase as one word", () => {
    expect(promptArguments(prompt, "flaky tests in CI")).toEqual({
      topic: "flaky",
      style: "tests in CI",
    });
    expect(promptArguments(prompt, '"flaky tests" terse')).toEqual({
      topic: "flaky tests",
      style: "terse",
    });
    expect(promptArguments(prompt, "flaky")).toEqual({ topic: "flaky" });
    expect(promptArguments({ name: "one", arguments: [{ name: "q" }] }, "a b  c")).toEqual({
      q: "a b  c",
    });
  });

  it("names a required argument left without a value", () => {
    expect(() => promptArguments(prompt, "")).toThrow("it needs <topic>");
  });
});
