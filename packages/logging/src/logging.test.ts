import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger } from "./index.ts";

function capture() {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk, _encoding, callback) {
      for (const line of String(chunk).split("\n").filter(Boolean)) lines.push(JSON.parse(line));
      callback();
    },
  });
  return { lines, logger: createLogger({ destination, name: "test", level: "debug" }) };
}

describe("createLogger", () => {
  it("writes JSON lines with level, time, name and message", () => {
    const { lines, logger } = capture();
    logger.info({ turnId: "t1" }, "turn started");
    expect(lines[0]).toMatchObject({ level: 30, name: "test", turnId: "t1", msg: "turn started" });
    expect(typeof lines[0]?.time).toBe("string");
  });

  it.each(["apiKey", "credential", "token", "password", "authorization"])(
    "redacts %s at the top level and when nested",
    (key) => {
      const { lines, logger } = capture();
      const secret = "sk-live-1234567890";
      logger.info({ [key]: secret, provider: { [key]: secret, nested: { [key]: secret } } }, "x");
      const text = JSON.stringify(lines[0]);
      expect(text).not.toContain(secret);
      expect(lines[0]?.[key]).toBe("[redacted]");
    },
  );

  it("redacts an Authorization header on a logged request", () => {
    const { lines, logger } = capture();
    logger.info({ req: { headers: { authorization: "Bearer abc.def" } } }, "request");
    expect(JSON.stringify(lines[0])).not.toContain("abc.def");
  });

  it("keeps fields that merely resemble secret names", () => {
    const { lines, logger } = capture();
    logger.info({ tokens: 12, tokenBudget: 100 }, "usage");
    expect(lines[0]).toMatchObject({ tokens: 12, tokenBudget: 100 });
  });
});
