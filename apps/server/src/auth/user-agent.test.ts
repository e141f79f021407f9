// A sign-in's device in words, from the User-Agents of real browsers and programs.
import { describe, expect, it } from "vitest";
import { describeUserAgent } from "./user-agent.ts";

describe("describeUserAgent", () => {
  it.each([
    [
      "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
      "Chrome on Linux",
    ],
    [
      "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36",
      "Chrome (headless) on Linux",
    ],
    [
      "Mozilla/5.0 (Macintosh; Intel Mac OS X 14.6; rv:132.0) Gecko/20100101 Firefox/132.0",
      "Firefox on macOS",
    ],
    [
      "Mozilla/5.0 (iPhone; CPU iPhone OS 17_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.6 Mobile/15E148 Safari/604.1",
      "Safari on iOS",
    ],
    [
      "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0",
      "Edge on Windows",
    ],
    [
      "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
      "Chrome on Android",
    ],
    ["curl/8.5.0", "curl"],
    ["node", "node"],
    ["Mozilla/5.0 (X11; Linux x86_64)", "a browser on Linux"],
  ])("%s → %s", (agent, words) => {
    expect(describeUserAgent(agent)).toBe(words);
  });

  it("says nothing without a header, or with one that names nothing", () => {
    expect(describeUserAgent(undefined)).toBeNull();
    expect(describeUserAgent("   ")).toBeNull();
    expect(describeUserAgent("() <script>")).toBeNull();
  });
});
