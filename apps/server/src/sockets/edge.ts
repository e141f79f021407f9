// The socket edge: payloads are parsed, and whatever a handler throws becomes an error ack
// (the ack edge itself is shared with the drone: `ackHandler` in @gadget/protocol).
import type { Logger } from "@gadget/logging";
import { ackHandler, type GadgetError, toGadgetError } from "@gadget/protocol";
import type { z } from "zod";
import { type StorageHealth, unavailableError } from "../storage/health.ts";

export interface EdgeOptions {
  /** Turns an outage of the database or Redis into `unavailable` (logged once per outage). */
  health?: StorageHealth;
  /** Told the code of every error answer (metrics). */
  onError?: (code: string) => void;
}

/** The answer for a thrown value: an outage is retryable `unavailable`, the rest as it is. */
export function answerFor(error: unknown, health?: StorageHealth): GadgetError {
  const down = health?.failed(error);
  return down ? unavailableError(down, error) : toGadgetError(error);
}

/**
 * Wraps a socket handler: validates the payload with `schema`, runs `work`, acknowledges
 * `{ok:true, ...result}` or `{ok:false, error}`; never throws. Outages are logged once each by
 * the health tracker, not once per request.
 * @example socket.on("heartbeat", handle(logger, heartbeatSchema, "heartbeat", async (beat) => ({ cancelledTurns: [] })));
 */
export function handle<S extends z.ZodType, R extends object>(
  logger: Logger,
  schema: S,
  what: string,
  work: (payload: z.infer<S>) => Promise<R>,
  options: EdgeOptions = {},
) {
  return ackHandler(logger, schema, what, work, {
    answerFor: (error) => answerFor(error, options.health),
    onError: options.onError,
  });
}

/** An Error for Socket.IO middleware: the client sees `message` and `data.code`. */
export function refusal(code: string, message: string): Error & { data: { code: string } } {
  const error = new Error(message) as Error & { data: { code: string } };
  error.data = { code };
  return error;
}
