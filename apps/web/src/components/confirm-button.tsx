// A destructive button that asks first, in place: "Delete" turns into what will be lost and
// "Yes, delete" / "Cancel" (no browser dialog, so it reads the same everywhere and in tests).
import { type ReactNode, useState } from "react";
import { ErrorNote } from "./error-note.tsx";

export interface ConfirmButtonProps {
  /** The button's words, e.g. "Delete". */
  label: string;
  /** What confirming does, said before it is done. */
  question: ReactNode;
  /** The confirming button's words, e.g. "Yes, delete the project". */
  confirmLabel: string;
  /** Does it; a rejection is shown and the question stays open. */
  onConfirm: () => Promise<void>;
  /** What failed, as the error box's title. */
  errorTitle: string;
}

export function ConfirmButton({
  label,
  question,
  confirmLabel,
  onConfirm,
  errorTitle,
}: ConfirmButtonProps) {
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  if (!asking) {
    return (
      <button type="button" className="button small danger" onClick={() => setAsking(true)}>
        {label}
      </button>
    );
  }
  return (
    <fieldset className="confirm" aria-label={label}>
      <span className="small">{question}</span>{" "}
      <button
        type="button"
        className="button small danger"
        disabled={busy}
        onClick={async () => {
          setBusy(true);
          setError(null);
          try {
            await onConfirm();
            setAsking(false);
          } catch (caught) {
            setError(caught);
          } finally {
            setBusy(false);
          }
        }}
      >
        {busy ? "Working…" : confirmLabel}
      </button>{" "}
      <button
        type="button"
        className="button small ghost"
        disabled={busy}
        onClick={() => {
          setAsking(false);
          setError(null);
        }}
      >
        Cancel
      </button>
      <ErrorNote error={error} title={errorTitle} />
    </fieldset>
  );
}
