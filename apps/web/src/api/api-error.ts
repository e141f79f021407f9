// The one error the web app shows: an API error body, a network failure or a bad answer, in words.
import { type FieldIssue, GadgetError, relayedCode } from "@gadget/protocol";

/**
 * An error from talking to the server, with a message fit to show a person: the server's own
 * code, or one of the client's (`network`, `timeout`, `bad_response`).
 */
export class ApiError extends GadgetError {
  /** HTTP status as it came, or 0 when no answer arrived. */
  private readonly answeredStatus: number;

  constructor(code: string, message: string, status: number, details?: unknown) {
    super(relayedCode(code), message, details === undefined ? undefined : { details });
    this.answeredStatus = status;
  }

  override get status(): number {
    return this.answeredStatus;
  }

  /** Field problems of a 400 answer, when the server named them. */
  get fieldIssues(): FieldIssue[] {
    if (!Array.isArray(this.details)) return [];
    return this.details.filter(
      (item): item is FieldIssue =>
        typeof item === "object" &&
        item !== null &&
        typeof (item as FieldIssue).path === "string" &&
        typeof (item as FieldIssue).message === "string",
    );
  }
}

/** Turns anything thrown while talking to the server into an ApiError with a readable message. */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof DOMException && error.name === "TimeoutError") {
    return new ApiError("timeout", "The server took too long to answer. Try again.", 0);
  }
  if (error instanceof TypeError) {
    return new ApiError(
      "network",
      "Cannot reach the Gadget Code server. Check that it is running and that you are online.",
      0,
    );
  }
  const message = error instanceof Error ? error.message : String(error);
  return new ApiError("internal", message || "Something went wrong.", 0);
}

const statusWords: Record<number, string> = {
  400: "The request was not accepted",
  401: "You are not logged in",
  403: "You are not allowed to do that",
  404: "Not found",
  409: "Conflict",
  413: "Too large",
  429: "Too many requests; wait a moment",
  500: "The server failed",
  502: "The server could not be reached through the proxy",
  503: "The service is unavailable",
  504: "The server took too long through the proxy",
};

/** Builds the error for an answer that is not 2xx, reading the `{"error":…}` body when present. */
export function errorFromResponse(status: number, body: unknown): ApiError {
  if (typeof body === "object" && body !== null && "error" in body) {
    const error = (body as { error: unknown }).error;
    if (typeof error === "object" && error !== null) {
      const { code, message, details } = error as Record<string, unknown>;
      if (typeof message === "string" && message) {
        return new ApiError(typeof code === "string" ? code : "internal", message, status, details);
      }
    }
  }
  const words = statusWords[status] ?? "The server answered with an error";
  return new ApiError(
    status >= 500 ? "unavailable" : "bad_response",
    `${words} (HTTP ${status}).`,
    status,
  );
}
