// The changes phase of a turn: what the turn changed in its worktree (capped so the event always
// fits on the wire), and what the drone's git left out of the snapshot or the commit, said once.
import { agentEvent, MAX_CHANGED_FILES, MAX_CHANGED_PATH_BYTES } from "@gadget/protocol";
import {
  cappedChanges,
  changesSince,
  describeLeftOut,
  type LeftOut,
  type WorkspaceSnapshot,
} from "@gadget/tools";
import type { TurnScope } from "./scope.ts";

const maxDiffBytes = 200_000;

/** Tells the turn, once per message, what the drone's git left out and why. */
export class LeftOutReport {
  private readonly said = new Set<string>();

  constructor(private readonly emit: TurnScope["emit"]) {}

  /** A status warning for `leftOut`, unless the same words were said already in this turn. */
  tell(leftOut: readonly LeftOut[]): void {
    const message = describeLeftOut(leftOut);
    if (!message || this.said.has(message)) return;
    this.said.add(message);
    this.emit(agentEvent("status", { phase: "workspace", level: "warning", message }));
  }
}

/** The `changes` event since `snapshot`: at most MAX_CHANGED_FILES files, with their `total`. */
export async function reportChanges(
  { emit }: TurnScope,
  directory: string,
  snapshot: WorkspaceSnapshot,
  leftOut: LeftOutReport,
): Promise<void> {
  const changes = await changesSince(directory, snapshot, { maxDiffBytes });
  leftOut.tell(changes.leftOut);
  const listed = cappedChanges(changes.files, MAX_CHANGED_FILES, MAX_CHANGED_PATH_BYTES);
  emit(
    agentEvent("changes", {
      files: listed.files,
      diff: changes.diff,
      truncated: changes.truncated,
      ...(listed.total > listed.files.length ? { total: listed.total } : {}),
    }),
  );
}
