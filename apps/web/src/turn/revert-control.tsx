// "Revert this turn" on a finished turn that changed files: asks first, then says what the revert
// put back, or which files later turns changed too (the worktree is then left as it was).
import type { ChatTurn, TurnRevertAnswer } from "@gadget/protocol";
import { useState } from "react";
import { type ApiError, toApiError } from "../api/api-error.ts";

export interface RevertControlProps {
  turn: ChatTurn;
  /** Files the turn changed, as its events or record list them. */
  changedFiles: number;
  revert(): Promise<TurnRevertAnswer>;
}

type Step =
  | { kind: "idle" }
  | { kind: "confirm" }
  | { kind: "reverting" }
  | { kind: "done"; answer: TurnRevertAnswer }
  | { kind: "failed"; error: ApiError };

const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? "" : "s"}`;

/** Files a refused revert named (409 `details.files`). */
function conflictingFiles(error: ApiError): string[] {
  const files = (error.details as { files?: unknown } | undefined)?.files;
  return Array.isArray(files)
    ? files.filter((file): file is string => typeof file === "string")
    : [];
}

/** The revert button with its confirm step and outcome, or "Reverted" for a reverted turn. */
export function RevertControl({ turn, changedFiles, revert }: RevertControlProps) {
  const [step, setStep] = useState<Step>({ kind: "idle" });
  if (turn.revertedAt && step.kind !== "done") {
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

  const confirm = async () => {
    setStep({ kind: "reverting" });
    try {
      setStep({ kind: "done", answer: await revert() });
    } catch (error) {
      setStep({ kind: "failed", error: toApiError(error) });
    }
  };

  switch (step.kind) {
    case "idle":
      return (
        <div className="revert-control">
          <button
            type="button"
            className="button small"
            onClick={() => setStep({ kind: "confirm" })}
          >
            Revert this turn
          </button>
        </div>
      );
    case "confirm":
    case "reverting":
      return (
        <fieldset className="note revert-control" aria-label="Revert this turn">
          <p>
            Undo this turn's changes to {plural(changedFiles, "file")}? A revert commit goes on the
            session's branch; later turns' work stays.
          </p>
          <button
            type="button"
            className="button small danger"
            disabled={step.kind === "reverting"}
            onClick={confirm}
          >
            {step.kind === "reverting" ? "Reverting…" : "Revert"}
          </button>{" "}
          <button
            type="button"
            className="button small"
            disabled={step.kind === "reverting"}
            onClick={() => setStep({ kind: "idle" })}
          >
            Keep the changes
          </button>
        </fieldset>
      );
    case "done": {
      const { revert: made, message } = step.answer;
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
    case "failed": {
      const files = conflictingFiles(step.error);
      return (
        <div className="error-note" role="alert">
          <strong>Could not revert: </strong>
          {files.length > 0 ? (
            <span>
              later turns changed the same lines in {files.join(", ")}. Nothing was changed; undo
              those turns first, or edit the files by hand.
            </span>
          ) : (
            <span>{step.error.message}</span>
          )}{" "}
          <button type="button" className="button small" onClick={() => setStep({ kind: "idle" })}>
            OK
          </button>
        </div>
      );
    }
  }
}
