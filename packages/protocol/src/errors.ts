// One error base with stable codes, shared by every process (openai-agents-js errors.ts).
import { z } from "zod";

/** Stable error codes. Clients switch on these, so they never change meaning. */
export const errorCodes = {
  validation_failed: 400,
  payload_too_large: 413,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  signup_failed: 400,
  rate_limited: 429,
  quota_exceeded: 429,
  protocol_mismatch: 400,
  no_drone_online: 503,
  unavailable: 503,
  internal: 500,
} as const;
export type ErrorCode = keyof typeof errorCodes;

/** What a tool tells the model went wrong (a failed tool result, never an HTTP answer). */
export const toolErrorCodes = [
  "ambiguous_edit",
  "bad_include",
  "bad_pattern",
  "binary_file",
  "command_refused",
  "edit_not_found",
  "git_dir_write",
  "invalid_edit",
  "invalid_offset",
  "invalid_path",
  "is_directory",
  "not_a_directory",
  "not_a_file",
  "not_found",
  "path_outside_workspace",
  "refused",
  "symlink_loop",
  "too_large",
] as const;
export type ToolErrorCode = (typeof toolErrorCodes)[number];

/** Why a turn's provider cannot be used, as a turn's `error` event says. */
export const providerErrorCodes = [
  "provider_auth",
  "provider_model_not_found",
  "provider_rejected",
  "provider_unavailable",
  "context_length_exceeded",
  /** The provider's rate limit lasted longer than the drone waits for one. */
  "quota_wait_exceeded",
] as const;
export type ProviderErrorCode = (typeof providerErrorCodes)[number];

/** Why a drone refuses a work order or cannot talk to its server (acks, CLI messages). */
export const droneErrorCodes = [
  "at_capacity",
  "workspace_not_git",
  "clone_failed",
  "worktree_failed",
  "config_exists",
  "invalid_config",
  "invalid_server_url",
  "invalid_token",
  "not_registered",
  "unregister_failed",
  "update_refused",
  "update_unavailable",
  "bad_response",
  "server_unreachable",
  "forge_failed",
] as const;

/** Why a process cannot start or go on: its environment, the sandbox, a service, the launcher. */
export const processErrorCodes = [
  "invalid_environment",
  "missing_variable",
  "launch_failed",
  "redis_unavailable",
  "sandbox_unavailable",
  "sandbox_failed",
] as const;

/** Why a prompt's `/name` command could not become the turn's prompt. */
export const commandErrorCodes = ["unknown_command", "command_failed"] as const;

/** Why a client (the web IDE, a CLI) got no usable answer from the server. */
export const clientErrorCodes = ["network", "timeout", "bad_response"] as const;

/**
 * Every code a GadgetError can carry, in one table so a code is never spelled two ways. Codes
 * outside `errorCodes` answer HTTP 500 at a REST edge.
 */
export type GadgetErrorCode =
  | ErrorCode
  | ToolErrorCode
  | ProviderErrorCode
  | (typeof droneErrorCodes)[number]
  | (typeof processErrorCodes)[number]
  | (typeof commandErrorCodes)[number]
  | (typeof clientErrorCodes)[number];

/**
 * A code another process sent (an ack, an API error body) that this one raises again. It is
 * passed through as it came: the peer may be a newer build with codes this one does not list.
 */
export function relayedCode(code: string): GadgetErrorCode {
  return code as GadgetErrorCode;
}

export type ErrorDetails = unknown;

/** Base of every error Gadget Code raises on purpose. */
export class GadgetError extends Error {
  readonly code: GadgetErrorCode;
  readonly details: ErrorDetails;

  constructor(
    code: GadgetErrorCode,
    message: string,
    options?: { details?: ErrorDetails; cause?: unknown },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.details = options?.details;
  }

  /** The HTTP status this error answers with at a REST edge. */
  get status(): number {
    return (errorCodes as Record<string, number>)[this.code] ?? 500;
  }

  toJSON(): ApiErrorBody {
    return {
      error: {
        code: this.code,
        message: this.message,
        ...(this.details === undefined ? {} : { details: this.details }),
      },
    };
  }
}

/** The caller did something wrong: bad input, missing rights, a stale version. */
export class UserError extends GadgetError {}

/** Something broke on our side or in a dependency; the caller may retry. */
export class SystemError extends GadgetError {}

/** Shape of every REST error body: `{"error":{"code","message","details"?}}`. */
export const apiErrorBodySchema = z.object({
  error: z.object({
    code: z.string(),
    message: z.string(),
    details: z.unknown().optional(),
  }),
});
export type ApiErrorBody = z.infer<typeof apiErrorBodySchema>;

/** One problem with a payload, located by a dotted path such as `project.gitUrl` or `context.0.role`. */
export interface FieldIssue {
  path: string;
  message: string;
}

/** Flattens zod's issues into `{path, message}` pairs with dotted paths. */
export function fieldIssues(error: z.ZodError): FieldIssue[] {
  return error.issues.map((issue) => ({
    path: issue.path.map(String).join(".") || "(root)",
    message: issue.message,
  }));
}

/** A validation failure whose message names every offending field. */
export function validationError(
  error: z.ZodError | readonly FieldIssue[],
  what = "payload",
): UserError {
  const issues = error instanceof z.ZodError ? fieldIssues(error) : [...error];
  const summary = issues.map((issue) => `${issue.path}: ${issue.message}`).join("; ");
  return new UserError("validation_failed", `Invalid ${what}: ${summary}`, { details: issues });
}

/**
 * Parses untrusted data at an edge. Returns the typed value or throws a UserError
 * with field paths.
 * @example const order = parseOrThrow(workOrderSchema, payload, "work order");
 */
export function parseOrThrow<T extends z.ZodType>(
  schema: T,
  data: unknown,
  what?: string,
): z.infer<T> {
  const result = schema.safeParse(data);
  if (!result.success) throw validationError(result.error, what);
  return result.data;
}

/** Turns any thrown value into a GadgetError, hiding internals of unexpected ones. */
export function toGadgetError(error: unknown): GadgetError {
  if (error instanceof GadgetError) return error;
  if (error instanceof z.ZodError) return validationError(error);
  return new SystemError("internal", "Internal error", { cause: error });
}
