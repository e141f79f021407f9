// Provider resilience: which errors are retried, how long to wait (backoff, jitter, retry-after).
import { isAbortError, sleep } from "./abort.ts";

export interface RetryPolicy {
  /** Retries after the first attempt. Default 4. */
  maxRetries: number;
  /** First backoff delay in ms; doubles each retry. Default 500. */
  baseDelayMs: number;
  /** Largest backoff delay in ms. Default 30 000. */
  maxDelayMs: number;
  /** A `retry-after` longer than this (ms) is ignored in favour of backoff. Default 60 000. */
  maxRetryAfterMs: number;
  /**
   * A rate limit (429, or 503 with `retry-after`) that outlasts the retries makes the turn wait
   * for it, up to this long in all (ms); 0 fails at once. Default 6 hours.
   */
  maxQuotaWaitMs?: number;
}

export const defaultRetryPolicy: RetryPolicy = {
  maxRetries: 4,
  baseDelayMs: 500,
  maxDelayMs: 30_000,
  maxRetryAfterMs: 60_000,
  maxQuotaWaitMs: 6 * 60 * 60 * 1000,
};

/** What to do about an error from a model call. */
export type ErrorVerdict =
  | { kind: "abort" }
  | {
      kind: "retry";
      retryAfterMs: number | undefined;
      description: string;
      /** No answer at all: the provider could not be reached (its URL, DNS, the network). */
      network?: boolean;
      /** A rate limit (429, or 503 saying when to come back): worth waiting out. */
      rateLimited?: boolean;
    }
  | { kind: "context_length"; description: string }
  | {
      kind: "fatal";
      code: "provider_auth" | "provider_model_not_found" | "provider_rejected";
      status: number | undefined;
      description: string;
    };

interface HttpLikeError {
  status?: unknown;
  headers?: unknown;
  code?: unknown;
  message?: unknown;
  name?: unknown;
  cause?: unknown;
}

const contextLengthPattern =
  /context[ _-]?length|maximum context|context window|too many tokens|prompt is too long|reduce the length/i;

const networkCodes = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "UND_ERR_SOCKET",
  "UND_ERR_CONNECT_TIMEOUT",
]);

/** Sorts an error from the OpenAI SDK, fetch or an injected model into retry / fatal / abort. */
export function classifyModelError(error: unknown, signal: AbortSignal): ErrorVerdict {
  if (signal.aborted || isAbortError(error)) return { kind: "abort" };
  const candidate = (error ?? {}) as HttpLikeError;
  const message = typeof candidate.message === "string" ? candidate.message : String(error);
  const status = typeof candidate.status === "number" ? candidate.status : undefined;
  const name = typeof candidate.name === "string" ? candidate.name : "";

  if (status === undefined) {
    // No HTTP status: a connection-level failure (the SDK's APIConnectionError, fetch's TypeError).
    if (
      name === "APIConnectionError" ||
      name === "APIConnectionTimeoutError" ||
      isNetworkError(error)
    )
      return {
        kind: "retry",
        retryAfterMs: undefined,
        description: `network error: ${message}`,
        network: true,
      };
    return { kind: "fatal", code: "provider_rejected", status, description: message };
  }
  if (status === 400 || status === 413) {
    const code = typeof candidate.code === "string" ? candidate.code : "";
    if (code === "context_length_exceeded" || contextLengthPattern.test(message))
      return { kind: "context_length", description: message };
  }
  if (status === 408 || status === 409 || status === 429 || status >= 500) {
    const retryAfterMs = retryAfterFromHeaders(candidate.headers);
    const rateLimited = status === 429 || (status === 503 && retryAfterMs !== undefined);
    return {
      kind: "retry",
      retryAfterMs,
      description: `HTTP ${status}: ${message}`,
      ...(rateLimited ? { rateLimited } : {}),
    };
  }
  if (status === 401 || status === 403)
    return {
      kind: "fatal",
      code: "provider_auth",
      status,
      description: `The model provider refused the credentials (HTTP ${status}): ${message}. Check the provider's API key.`,
    };
  if (status === 404)
    return {
      kind: "fatal",
      code: "provider_model_not_found",
      status,
      description: `The model provider does not know this model or endpoint (HTTP 404): ${message}. Check the model id and base URL.`,
    };
  return {
    kind: "fatal",
    code: "provider_rejected",
    status,
    description: `The model provider rejected the request (HTTP ${status}): ${message}`,
  };
}

function isNetworkError(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current; depth += 1) {
    const candidate = current as HttpLikeError;
    if (typeof candidate.code === "string" && networkCodes.has(candidate.code)) return true;
    if (current instanceof TypeError && /fetch failed|terminated|network/i.test(current.message))
      return true;
    current = candidate.cause;
  }
  return false;
}

/** Reads `retry-after-ms` (ms) or `retry-after` (seconds or an HTTP date) from a Headers-like value. */
export function retryAfterFromHeaders(headers: unknown): number | undefined {
  const read = (name: string): string | null => {
    if (!headers || typeof headers !== "object") return null;
    const getter = (headers as { get?: unknown }).get;
    if (typeof getter === "function")
      return (getter as (key: string) => string | null).call(headers, name);
    const value = (headers as Record<string, unknown>)[name];
    return typeof value === "string" ? value : null;
  };
  const milliseconds = Number.parseFloat(read("retry-after-ms") ?? "");
  if (Number.isFinite(milliseconds) && milliseconds >= 0) return milliseconds;
  const value = read("retry-after");
  if (value !== null) {
    const seconds = Number.parseFloat(value);
    if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
    const date = Date.parse(value);
    if (Number.isFinite(date)) return Math.max(0, date - Date.now());
  }
  // OpenAI's `x-ratelimit-reset-requests: 6m0s`, Anthropic's `…-reset: <RFC 3339 date>`: the
  // latest reset is when both limits allow a call again.
  const resets = [
    "x-ratelimit-reset-requests",
    "x-ratelimit-reset-tokens",
    "x-ratelimit-reset",
    "anthropic-ratelimit-requests-reset",
    "anthropic-ratelimit-tokens-reset",
  ]
    .map((name) => resetDelay(read(name)))
    .filter((delay): delay is number => delay !== undefined);
  return resets.length > 0 ? Math.max(...resets) : undefined;
}

/** "1m30s", "250ms", "12.5s", "20" (seconds) or a date, as ms from now. */
function resetDelay(value: string | null): number | undefined {
  if (!value) return undefined;
  const units: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1 };
  const parts = [...value.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)];
  if (parts.length > 0 && parts.map((part) => part[0]).join("") === value.trim()) {
    return parts.reduce((sum, part) => sum + Number(part[1]) * (units[part[2]!] ?? 0), 0);
  }
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isFinite(date) ? Math.max(0, date - Date.now()) : undefined;
}

/**
 * Delay before retry number `retry` (1-based): the server's `retry-after` when it is sane,
 * otherwise exponential backoff with jitter (between half and all of the capped delay).
 */
export function retryDelay(
  retry: number,
  retryAfterMs: number | undefined,
  policy: RetryPolicy,
): number {
  if (retryAfterMs !== undefined && retryAfterMs <= policy.maxRetryAfterMs) return retryAfterMs;
  const capped = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (retry - 1));
  return capped / 2 + Math.random() * (capped / 2);
}

/** Waits before a retry; rejects at once if the turn is cancelled. */
export function waitBeforeRetry(ms: number, signal: AbortSignal): Promise<void> {
  return sleep(ms, signal);
}
