import { describe, expect, it } from "vitest";
import { statusLine, Terminal } from "./terminal.ts";
import type { TurnProgress } from "./turn/progress.ts";

const base: TurnProgress = {
  turnId: "t1",
  project: "demo",
  pass: 3,
  tool: "run_command",
  tokens: 12_345,
  cost: 0.0123,
  startedAt: 0,
  phase: "tool",
};

describe("statusLine", () => {
  it("shows project, pass, running tool, tokens, cost and elapsed time", () => {
    expect(statusLine(base, 65_000)).toBe(
      "[demo] · pass 3 · run_command · 12.3k tokens · $0.0123 · 1m 05s",
    );
  });

  it("shows a progress bar while cloning", () => {
    const cloning = {
      ...base,
      pass: 0,
      tool: null,
      tokens: 0,
      cost: 0,
      phase: "workspace",
      detail: "receiving 40%",
    };
    expect(statusLine(cloning, 2_000)).toBe(
      "[demo] · ████░░░░░░ receiving 40% · 0 tokens · $0.0000 · 2s",
    );
  });
});

describe("Terminal", () => {
  it("writes plain timestamped lines when not on a TTY, and no status lines", () => {
    const written: string[] = [];
    const terminal = new Terminal({ write: (text) => written.push(text), isTTY: false });
    terminal.progress(base);
    terminal.say("connected");
    terminal.close();
    expect(written).toHaveLength(1);
    expect(written[0]).toMatch(/^\d\d:\d\d:\d\d connected\n$/);
  });

  it("keeps one live line per active turn at the bottom on a TTY, and removes it when the turn ends", () => {
    const written: string[] = [];
    const terminal = new Terminal({ write: (text) => written.push(text), isTTY: true });
    terminal.progress(base);
    terminal.progress({ ...base, turnId: "t2", project: "other", pass: 1, tool: null });
    const screen = written.join("");
    expect(screen).toContain("[demo] · pass 3 · run_command");
    expect(screen).toContain("[other] · pass 1");
    written.length = 0;
    terminal.finished("t1");
    // Clears the two lines it drew, then draws the one left.
    expect(written[0]).toBe("\x1b[2A\x1b[0J");
    expect(written.join("")).not.toContain("[demo]");
    terminal.close();
  });
});
