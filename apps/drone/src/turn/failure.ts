// A failure of the drone's own part of a turn (git, the sandbox, a full disk), told to the turn as
// an `error` event with a stable code and written to the drone's log.
import { agentEvent, toGadgetError } from "@gadget/protocol";
import type { TurnScope } from "./scope.ts";

/** Emits `error` with the failure's code (`internal` unless it is a GadgetError) and logs it. */
export function reportFailure({ order, emit, logger }: TurnScope, error: unknown): void {
  const problem = toGadgetError(error);
  // An unexpected failure keeps its own words: the drone runs on the user's machine, and
  // "Internal error" would hide what there is to fix (a full disk, a missing git).
  const words = error instanceof Error ? error.message : String(error);
  const message = problem.code === "internal" ? words : problem.message;
  emit(agentEvent("error", { code: problem.code, message }));
  logger.error({ turnId: order.turnId, err: message }, "turn failed on the drone");
}
