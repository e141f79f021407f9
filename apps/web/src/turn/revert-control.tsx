// "Revert this turn" on a finished turn that changed files: asks first, then says what the revert
// put back, or which files later turns changed too (the worktree is then left as it was).
import type { ChatTurn, TurnRevertAnswer } from "@gadget/protocol";
import { useMutation } from "@tanstack/react-query";
import { toApiError } from "../api/api-error.ts";
import { ConfirmButton } from "../components/confirm-button.tsx";

export interface RevertControlProps {
  turn: ChatTurn;
  /** Files the turn changed, as its events or record list them. */
  changedFiles: number;
  revert(): Promise<TurnRevertAnswer>;
}

const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? "" : "s"}`;

/** Files a refused revert named (409 `details.files`). */
function conflictingFiles(error: unknown): string[] {
  const files = (toApiError(error).details as { files?: unknown } | undefined)?.files;
  return Array.isArray(files)
    ? files.filter((file): file is string => typeof file === "string")
    : [];
}

/** The revert button with its confirm step and outcome, or "Reverted" for a reverted turn. */
export function RevertControl({ turn, changedFiles, revert }: RevertControlProps) {
  const reverting = useMutation({ mutationFn: revert });
  if (reverting.data) {
    const { revert: made, message } = reverting.data;
    return (
      <p className="note revert-note" role="status">
        {made ? (
          <>
            <strong>Reverted</strong>: {made.files.join(", ")} back as before this turn
            {made.commit ? (
              <>
                {" "}
                (commit <code>{made.commit.slice(0, 7)}</code>).
              </>
            ) : (
              " (its changes had not been committed; nothing new was committed)."
            )}
          </>
        ) : (
          (message ?? "This turn changed no files: nothing to revert.")
        )}
      </p>
    );
  }
  if (turn.revertedAt) {
    return (
      <p className="note revert-note" role="status">
        <strong>Reverted</strong>
        {turn.revertCommit ? (
          <>
            {" "}
            by commit <code>{turn.revertCommit.slice(0, 7)}</code>
          </>
        ) : null}
      </p>
    );
  }
  if (changedFiles === 0) return null;
  if (reverting.error) {
    const files = conflictingFiles(reverting.error);
    return (
      <div className="error-note" role="alert">
        <strong>Could not revert: </strong>
        {files.length > 0 ? (
          <span>
            later turns changed the same lines in {files.join(", ")}. Nothing was changed; undo
            those turns first, or edit the files by hand.
          </span>
        ) : (
          <span>{toApiError(reverting.error).message}</span>
        )}{" "}
        <button type="button" className="button small" onClick={() => reverting.reset()}>
          OK
        </button>
      </div>
    );
  }
  return (
    <div className="revert-control">
      <ConfirmButton
        label="Revert this turn"
        tone="plain"
        className="note revert-control"
        question={`Undo this turn's changes to ${plural(changedFiles, "file")}? A revert commit goes on the session's branch; later turns' work stays.`}
        confirmLabel="Revert"
        busyLabel="Reverting…"
        cancelLabel="Keep the changes"
        errorTitle="Could not revert"
        // A refusal is shown in place of the question (with the files it names), not inside it.
        onConfirm={() => reverting.mutateAsync().catch(() => undefined)}
      />
    </div>
  );
}
