// The socket edge: payloads are parsed, and whatever a handler throws becomes an error ack.
import type { Logger } from "@gadget/logging";
import { type Ack, type GadgetError, parseOrThrow, toGadgetError } from "@gadget/protocol";
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
 * `{ok:true, ...result}` or `{ok:false, error}`; never throws.
 * @example socket.on("heartbeat", handle(logger, heartbeatSchema, "heartbeat", async (beat) => ({ cancelledTurns: [] })));
 */
export function handle<S extends z.ZodType, R extends object>(
  logger: Logger,
  schema: S,
  what: string,
  work: (payload: z.infer<S>) => Promise<R>,
  options: EdgeOptions = {},
) {
  return (payload: unknown, ack?: unknown) => {
    const reply = typeof ack === "function" ? (ack as (result: Ack<R>) => void) : () => undefined;
    Promise.resolve()
      .then(() => work(parseOrThrow(schema, payload, what)))
      .then(
        (result) => reply({ ok: true, ...result } as Ack<R>),
        (error: unknown) => {
          const problem = answerFor(error, options.health);
          // Outages are logged once each by the health tracker, not once per request.
          if (problem.status >= 500 && problem.code !== "unavailable") {
            logger.error({ err: error }, `${what} failed`);
          }
          options.onError?.(problem.code);
          reply({ ok: false, ...problem.toJSON() });
        },
      );
  };
}

/** An Error for Socket.IO middleware: the client sees `message` and `data.code`. */
export function refusal(code: string, message: string): Error & { data: { code: string } } {
  const error = new Error(message) as Error & { data: { code: string } };
  error.data = { code };
  return error;
}
