// The engine's run in a turn: the agent loop on one input (the turn's, or a repair pass's), its
// events emitted as the turn's, its approvals, steering messages, hooks and checkpoints wired in.
import {
  type ApprovalChannel,
  runTurn,
  type SteeringInbox,
  type TurnInput,
  type TurnOptions,
  type TurnOutcome,
} from "@gadget/agent";
import type { TurnCheckpoints } from "./checkpoint.ts";
import type { TurnScope } from "./scope.ts";

/** What the engine is given besides its input; the turn keeps them across its repair passes. */
export interface EngineWiring {
  approvals: ApprovalChannel;
  steering: SteeringInbox;
  checkpoints: Pick<TurnCheckpoints, "record">;
  /** The project's hooks as of the commit the turn started on (hooks/turn-hooks.ts). */
  hooks?: TurnOptions["hooks"] | undefined;
  /** Engine knobs (tests shrink delays). */
  tunables?: TurnOptions["tunables"] | undefined;
}

/** Runs the engine on `input` until it ends; every event but its `done` is the turn's. */
export async function runEngine(
  { emit, logger }: TurnScope,
  input: TurnInput,
  wiring: EngineWiring,
  signal: AbortSignal,
): Promise<TurnOutcome> {
  const turn = runTurn(input, {
    signal,
    onApproval: wiring.approvals.handler,
    steering: wiring.steering,
    ...(wiring.hooks ? { hooks: wiring.hooks } : {}),
    onCheckpoint: (state) => wiring.checkpoints.record(state),
    logger,
    ...(wiring.tunables ? { tunables: wiring.tunables } : {}),
  });
  for (;;) {
    const next = await turn.next();
    if (next.done) return next.value;
    // The drone ends the turn itself, after the changes report and verification.
    if (next.value.type === "done") continue;
    emit(next.value);
  }
}
