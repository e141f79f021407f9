// Provider API keys are sealed with AES-256-GCM: different every time, tamper-evident, key-bound.
import { describe, expect, it } from "vitest";
import { createSecretBox } from "./secret-box.ts";

describe("createSecretBox", () => {
  const box = createSecretBox("a-secret-that-is-long-enough-0123456789");

  it("round-trips and never stores the plaintext", () => {
    const sealed = box.seal("sk-live-123");
    expect(sealed).toMatch(/^v1:/);
    expect(sealed).not.toContain("sk-live-123");
    expect(box.seal("sk-live-123")).not.toBe(sealed);
    expect(box.open(sealed)).toBe("sk-live-123");
  });

  it("refuses a tampered value or another key", () => {
    const sealed = box.seal("sk-live-123");
    const raw = Buffer.from(sealed.slice(3), "base64");
    raw[raw.length - 1] = (raw[raw.length - 1] ?? 0) ^ 1;
    expect(() => box.open(`v1:${raw.toString("base64")}`)).toThrow();
    expect(() => createSecretBox("another-secret-that-is-long-enough-xyz").open(sealed)).toThrow();
  });
});
