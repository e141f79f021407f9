// The error a turn fails with when the model provider cannot be used (bad key, unknown model, down).
import { type ProviderErrorCode, SystemError } from "@gadget/protocol";

/** Stable codes of provider failures, as they appear in the turn's `error` event. */
export type { ProviderErrorCode };

/** A provider failure the engine will not (or no longer) retry; `status` is the HTTP status if any. */
export class ProviderError extends SystemError {
  readonly httpStatus: number | undefined;

  constructor(
    code: ProviderErrorCode,
    message: string,
    options: { httpStatus?: number; cause?: unknown } = {},
  ) {
    super(code, message, { cause: options.cause });
    this.httpStatus = options.httpStatus;
  }
}
