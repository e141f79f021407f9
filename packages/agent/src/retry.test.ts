// Which provider errors are retried, and how long the engine waits.
import { describe, expect, it } from "vitest";
import {
  classifyModelError,
  defaultRetryPolicy,
  retryAfterFromHeaders,
  retryDelay,
} from "./retry.ts";

const live = new AbortController().signal;

function httpError(status: number, message = "x", extra: Record<string, unknown> = {}) {
  return Object.assign(new Error(message), { status, ...extra });
}

describe("retry policy", () => {
  it("retries rate limits, timeouts, conflicts, server and network errors", () => {
    for (const status of [408, 409, 429, 500, 502, 503])
      expect(classifyModelError(httpError(status), live).kind).toBe("retry");
    const network = Object.assign(new TypeError("fetch failed"), { cause: { code: "ECONNRESET" } });
    expect(classifyModelError(network, live).kind).toBe("retry");
  });

  it("fails at once on credentials, unknown models and bad requests; spots context overflows", () => {
    expect(classifyModelError(httpError(401), live)).toMatchObject({
      kind: "fatal",
      code: "provider_auth",
    });
    expect(classifyModelError(httpError(403), live)).toMatchObject({
      kind: "fatal",
      code: "provider_auth",
    });
    expect(classifyModelError(httpError(404), live)).toMatchObject({
      kind: "fatal",
      code: "provider_model_not_found",
    });
    expect(classifyModelError(httpError(422), live)).toMatchObject({
      kind: "fatal",
      code: "provider_rejected",
    });
    expect(
      classifyModelError(httpError(400, "bad", { code: "context_length_exceeded" }), live).kind,
    ).toBe("context_length");
    expect(
      classifyModelError(httpError(400, "prompt is too long: 210000 tokens > 200000 maximum"), live)
        .kind,
    ).toBe("context_length");
  });

  it("never retries after an abort", () => {
    const controller = new AbortController();
    controller.abort();
    expect(classifyModelError(httpError(503), controller.signal).kind).toBe("abort");
  });

  it("reads retry-after-ms, retry-after seconds and HTTP dates", () => {
    expect(
      retryAfterFromHeaders(new Headers({ "retry-after-ms": "250", "retry-after": "9" })),
    ).toBe(250);
    expect(retryAfterFromHeaders(new Headers({ "retry-after": "2" }))).toBe(2000);
    const date = new Date(Date.now() + 60_000).toUTCString();
    expect(retryAfterFromHeaders(new Headers({ "retry-after": date }))).toBeGreaterThan(50_000);
    expect(retryAfterFromHeaders(new Headers())).toBeUndefined();
  });

  it("backs off exponentially with jitter, capped, and ignores absurd retry-after values", () => {
    const policy = { ...defaultRetryPolicy, baseDelayMs: 100, maxDelayMs: 1_000 };
    for (let retry = 1; retry <= 6; retry += 1) {
      const cap = Math.min(1_000, 100 * 2 ** (retry - 1));
      const delay = retryDelay(retry, undefined, policy);
      expect(delay).toBeGreaterThanOrEqual(cap / 2);
      expect(delay).toBeLessThanOrEqual(cap);
    }
    expect(retryDelay(1, 5_000, policy)).toBe(5_000);
    expect(retryDelay(1, 10 * 60_000, policy)).toBeLessThanOrEqual(100);
  });
});
