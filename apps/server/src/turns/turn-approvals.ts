// Deciding a turn's approvals: the decision relayed to the drone holding the turn, then recorded;
// "always allow" takes its command from the turn's own approval event, never from the request.
import { setTimeout as delay } from "node:timers/promises";
import type { ChatTurnDocument, Models } from "@gadget/db";
import {
  type Ack,
  type ApprovalDecisionBody,
  isFinalTurnStatus,
  relayedCode,
  SystemError,
  UserError,
} from "@gadget/protocol";
import type { ResolvedConfig } from "../config.ts";
import type { Locks } from "../redis/locks.ts";
import { type DronesNamespace, droneRoom } from "../sockets/rooms.ts";
import { updateSession } from "./store/session-writes.ts";
import { resolveApproval } from "./store/turn-state.ts";
import type { TurnStore } from "./store/turn-store.ts";

export interface TurnApprovalDependencies {
  config: Pick<ResolvedConfig, "droneRequestTimeoutMs">;
  models: Models;
  locks: Locks;
  store: TurnStore;
  drones: DronesNamespace;
}

/** How long a decision waits for its turn to record an approval event already stored. */
const approvalSettleMs = 2000;

const notFound = (what: string) => new UserError("not_found", `${what} not found`);

/**
 * Relays an approval decision to the drone holding the turn, then records it on the turn.
 * @example await decideApproval(dependencies, { userId, turnId, approvalId }, { approve: true });
 */
export async function decideApproval(
  dependencies: TurnApprovalDependencies,
  { userId, turnId, approvalId }: { userId: string; turnId: string; approvalId: string },
  body: ApprovalDecisionBody,
): Promise<void> {
  const { store, config } = dependencies;
  const turn = await withPendingApproval(dependencies, userId, turnId, approvalId);
  // The command comes from the turn's own approval event, never from the request.
  const command = body.alwaysAllow ? await commandOf(dependencies.models, turn, approvalId) : null;
  let answers: Ack[];
  try {
    answers = await dependencies.drones
      .to(droneRoom(String(turn.drone)))
      .timeout(config.droneRequestTimeoutMs)
      .emitWithAck("approval_decision", {
        turnId,
        approvalId,
        approve: body.approve,
        ...(body.input === undefined ? {} : { input: body.input }),
        ...(command ? { alwaysAllow: true } : {}),
      });
  } catch {
    throw new SystemError("unavailable", "The drone running this turn did not answer; try again");
  }
  const answer = answers[0];
  if (!answer) {
    throw new SystemError(
      "no_drone_online",
      "The drone running this turn is not connected; decide again when it is back",
    );
  }
  if (!answer.ok)
    throw new UserError(relayedCode(answer.error.code), answer.error.message, {
      details: answer.error.details,
    });
  if (command) {
    await updateSession(
      dependencies,
      { _id: turn.session },
      { $addToSet: { allowedCommands: command } },
    );
  }
  await store.mutate(turnId, (current) => {
    if (!current.pendingApprovals?.some((approval) => approval.id === approvalId)) return null;
    const next = resolveApproval(current, approvalId);
    return { set: { pendingApprovals: next.pendingApprovals, status: next.status } };
  });
}

/**
 * The turn, once `approvalId` is pending on it. An approval event is readable a moment before the
 * turn records it (events are stored first, the turn's fields right after, on whichever server
 * process holds the drone), so a client that decides as soon as it reads the event waits for that.
 */
async function withPendingApproval(
  dependencies: Pick<TurnApprovalDependencies, "store" | "models">,
  userId: string,
  turnId: string,
  approvalId: string,
): Promise<ChatTurnDocument> {
  const deadline = Date.now() + approvalSettleMs;
  for (;;) {
    const turn = await dependencies.store.findOwned(userId, turnId);
    if (!turn) throw notFound("Turn");
    if (turn.pendingApprovals?.some((approval) => approval.id === approvalId)) return turn;
    if (isFinalTurnStatus(turn.status) || Date.now() >= deadline) {
      throw notFound("Pending approval");
    }
    const announced = await dependencies.models.TurnEvent.exists({
      turn: turn._id,
      type: "approval",
      seq: { $gt: turn.lastSeq ?? 0 },
    });
    if (!announced) throw notFound("Pending approval");
    await delay(50);
  }
}

/** The exact command of a pending run_command approval; 400 for any other call. */
async function commandOf(
  models: Models,
  turn: ChatTurnDocument,
  approvalId: string,
): Promise<string> {
  const events = await models.TurnEvent.find({
    turn: turn._id,
    type: "approval",
  })
    .sort({ seq: -1 })
    .limit(20)
    .lean();
  for (const event of events) {
    const approvals = (event.data as { approvals?: unknown[] } | null)?.approvals ?? [];
    for (const approval of approvals as Array<{
      id?: unknown;
      tool?: unknown;
      params?: unknown;
    }>) {
      if (approval.id !== approvalId) continue;
      const command = (approval.params as { command?: unknown } | null)?.command;
      if (approval.tool === "run_command" && typeof command === "string" && command) {
        return command;
      }
      throw new UserError(
        "validation_failed",
        "Invalid approval decision: alwaysAllow: only a run_command call can be always allowed",
        { details: [{ path: "alwaysAllow", message: "not a run_command call" }] },
      );
    }
  }
  throw new UserError("not_found", "Pending approval not found");
}
