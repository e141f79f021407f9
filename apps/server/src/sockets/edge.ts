// The socket edge: payloads are parsed, and whatever a handler throws becomes an error ack.
import type { Logger } from "@gadget/logging";
import { type Ack, parseOrThrow, toGadgetError } from "@gadget/protocol";
import type { z } from "zod";

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
) {
  return (payload: unknown, ack?: unknown) => {
    const reply = typeof ack === "function" ? (ack as (result: Ack<R>) => void) : () => undefined;
    Promise.resolve()
      .then(() => work(parseOrThrow(schema, payload, what)))
      .then(
        (result) => reply({ ok: true, ...result } as Ack<R>),
        (error: unknown) => {
          const problem = toGadgetError(error);
          if (problem.status >= 500) logger.error({ err: error }, `${what} failed`);
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
