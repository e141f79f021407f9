// An error a provider sent inside a stream it had already answered with HTTP 200.
import { type ProviderErrorCode, SystemError } from "@gadget/protocol";

/**
 * A `data: {"error":…}` event in a 200 stream, with the HTTP status the error stands for. The
 * `openai` SDK throws such events without a status, which would read as a fatal rejection;
 * given the status, the retry policy treats them like the HTTP answer they replace (a server
 * error, overload or rate limit is retried, an invalid request is not).
 */
export class StreamedError extends SystemError {
  /** The HTTP status the provider would have answered with had it not started streaming. */
  readonly httpStatus: number;
  /** The provider's own error body, as it came. */
  readonly body: Record<string, unknown>;

  constructor(
    code: ProviderErrorCode,
    message: string,
    options: { httpStatus: number; body: Record<string, unknown>; cause?: unknown },
  ) {
    super(code, message, { cause: options.cause });
    this.httpStatus = options.httpStatus;
    this.body = options.body;
  }

  /** What the retry policy reads: the status the error stands for. */
  override get status(): number {
    return this.httpStatus;
  }
}

/** Statuses for the error `type`/`code` strings providers use in stream error bodies. */
const statusByKind: Array<[RegExp, number]> = [
  [/context_length|context_window|too_many_tokens/, 400],
  [/rate_limit|too_many_requests|resource_exhausted/, 429],
  [/overloaded|unavailable|server_error|internal|api_error|timeout|upstream/, 503],
  [/invalid_request|bad_request|invalid_argument|validation/, 400],
  [/authentication|unauthenticated|invalid_api_key/, 401],
  [/permission|forbidden/, 403],
  [/not_found/, 404],
];

/**
 * The StreamedError an error body stands for. A body that names no kind this reader knows
 * counts as 502: the provider had accepted the request, so what broke is on its side.
 * @example streamedError({ message: "Overloaded", type: "overloaded_error" }).status // 503
 */
export function streamedError(body: unknown, cause?: unknown): StreamedError {
  const error: Record<string, unknown> =
    body && typeof body === "object"
      ? (body as Record<string, unknown>)
      : { message: String(body) };
  const status = statusOf(error) ?? 502;
  const message =
    typeof error.message === "string" && error.message
      ? error.message
      : `the provider sent an error inside the stream: ${JSON.stringify(error)}`;
  const code: ProviderErrorCode =
    status === 400 && /context/i.test(kindOf(error))
      ? "context_length_exceeded"
      : status === 429 || status >= 500
        ? "provider_unavailable"
        : "provider_rejected";
  return new StreamedError(code, message, { httpStatus: status, body: error, cause });
}

function statusOf(error: Record<string, unknown>): number | undefined {
  // OpenRouter and Google put the HTTP status in `code` (a number, sometimes a numeric string).
  for (const field of [error.code, error.status]) {
    const number = typeof field === "string" ? Number.parseInt(field, 10) : field;
    if (typeof number === "number" && number >= 400 && number <= 599) return number;
  }
  const kind = kindOf(error);
  if (!kind) return undefined;
  for (const [pattern, status] of statusByKind) if (pattern.test(kind)) return status;
  return undefined;
}

function kindOf(error: Record<string, unknown>): string {
  return [error.type, error.code, error.status]
    .filter((field): field is string => typeof field === "string")
    .join(" ")
    .toLowerCase();
}
