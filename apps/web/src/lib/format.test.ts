// Numbers as the UI writes them.
import { describe, expect, it } from "vitest";
import {
  describeParams,
  formatAgo,
  formatCost,
  formatElapsed,
  formatTokens,
  formatUntil,
} from "./format.ts";

describe("format", () => {
  it("writes money, tokens and durations briefly", () => {
    expect([formatCost(0), formatCost(0.04123), formatCost(1.5)]).toEqual([
      "$0.00",
      "$0.0412",
      "$1.50",
    ]);
    expect([
      formatTokens(950),
      formatTokens(1234),
      formatTokens(56_789),
      formatTokens(2_100_000),
    ]).toEqual(["950", "1.2k", "57k", "2.1M"]);
    expect([
      formatElapsed(850),
      formatElapsed(4200),
      formatElapsed(65_000),
      formatElapsed(50 * 3_600_000),
    ]).toEqual(["850ms", "4.2s", "1m 05s", "2d 02h"]);
  });

  it("says how long ago something was seen", () => {
    const now = Date.UTC(2025, 0, 1, 12);
    expect(formatAgo(null, now)).toBe("never");
    expect(formatAgo(new Date(now - 5_000), now)).toBe("just now");
    expect(formatAgo(new Date(now - 5 * 60_000), now)).toBe("5 min ago");
    expect(formatAgo(new Date(now - 3 * 3_600_000).toISOString(), now)).toBe("3 h ago");
  });

  it("says how long until something ends, and that it has", () => {
    const now = Date.UTC(2025, 0, 1, 12);
    expect(formatUntil(new Date(now + 5 * 60_000), now)).toBe("in 5 min");
    expect(formatUntil(new Date(now + 3 * 3_600_000).toISOString(), now)).toBe("in 3 h");
    expect(formatUntil(new Date(now + 30 * 86_400_000), now)).toBe("in 30 days");
    expect(formatUntil(new Date(now - 1000), now)).toBe("expired");
  });

  it("previews tool arguments by their command or path", () => {
    expect(describeParams({ command: "npm test", cwd: "." })).toBe("npm test");
    expect(describeParams({ path: "src/a.ts", offset: 3 })).toBe("src/a.ts");
    expect(describeParams({ sections: { Plan: "x" } })).toBe('{"sections":{"Plan":"x"}}');
  });
});
