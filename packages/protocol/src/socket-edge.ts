// The socket edge the server and the drone share: a request's payload is parsed, and whatever
// its handler throws becomes an error ack (tRPC `getTRPCErrorFromUnknown`); a handler never crashes.
import type { z } from "zod";
import { type GadgetError, parseOrThrow, toGadgetError } from "./errors.ts";
import type { Ack } from "./socket.ts";

/** Where the edge logs failures on its own side; pino's loggers and the engine's fit. */
export interface EdgeLogger {
  error(object: object, message?: string): void;
}

export interface AckOptions {
  /** Turns a thrown value into the answer; default `toGadgetError` (the server adds outages). */
  answerFor?: ((error: unknown) => GadgetError) | undefined;
  /** Told the code of every error answer (metrics). */
  onError?: ((code: string) => void) | undefined;
}

/**
 * Wraps a socket handler: validates the payload with `schema`, runs `work`, acknowledges
 * `{ok: true, ...result}` or `{ok: false, error}`; never throws. Failures on this side (status 500
 * and above) are logged, except `unavailable`: an outage is expected and retried, not a bug.
 * @example socket.on("turn_cancel", ackHandler(logger, turnControlSchema, "cancel", async ({ turnId }) => ({})));
 */
export function ackHandler<S extends z.ZodType, R extends object>(
  logger: EdgeLogger,
  schema: S,
  what: string,
  work: (payload: z.infer<S>) => Promise<R>,
  options: AckOptions = {},
): (payload: unknown, ack?: (result: Ack<R>) => void) => void {
  const answerFor = options.answerFor ?? toGadgetError;
  return (payload, ack) => {
    // The peer is not trusted to have asked for an answer.
    const reply = typeof ack === "function" ? ack : () => undefined;
    Promise.resolve()
      .then(() => work(parseOrThrow(schema, payload, what)))
      .then(
        (result) => reply({ ok: true, ...result } as Ack<R>),
        (error: unknown) => {
          const problem = answerFor(error);
          if (problem.status >= 500 && problem.code !== "unavailable") {
            logger.error({ err: error }, `${what} failed`);
          }
          options.onError?.(problem.code);
          reply({ ok: false, ...problem.toJSON() });
        },
      );
  };
}
