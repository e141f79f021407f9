// "Always allow" of an approval: the command comes from the turn's own approval event, never from
// the request that approves it.
import type { ChatTurnDocument, Models } from "@gadget/db";
import { UserError } from "@gadget/protocol";

/** The exact command of a pending run_command approval; 400 for any other call. */
export async function commandOf(
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
