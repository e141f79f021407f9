// A button that asks first, in place: "Delete" turns into what will happen and "Yes, delete" /
// "Cancel" (no browser dialog, so it reads the same everywhere and in tests).
import { useMutation } from "@tanstack/react-query";
import { type ReactNode, useState } from "react";
import { ErrorNote } from "./error-note.tsx";

export interface ConfirmButtonProps {
  /** The button's words, e.g. "Delete"; also the name of the question. */
  label: string;
  /** What confirming does, said before it is done. */
  question?: ReactNode;
  /** The confirming button's words, e.g. "Yes, delete the project". */
  confirmLabel: string;
  /** The button that closes the question (default "Cancel"). */
  cancelLabel?: string;
  /** The confirming button's words while it works (default "Working…"). */
  busyLabel?: string;
  /** Does it; a rejection is shown and the question stays open. */
  onConfirm: () => Promise<unknown>;
  /** What failed, as the error box's title. */
  errorTitle: string;
  /** The first button's look: red (default), quiet or plain; the confirming one is always red. */
  tone?: "danger" | "ghost" | "plain";
  /** Extra class of the question (e.g. to set it off as a note). */
  className?: string;
}

const toneClass = {
  danger: "button small danger",
  ghost: "button small ghost",
  plain: "button small",
};

export function ConfirmButton({
  label,
  question,
  confirmLabel,
  cancelLabel = "Cancel",
  busyLabel = "Working…",
  onConfirm,
  errorTitle,
  tone = "danger",
  className,
}: ConfirmButtonProps) {
  const [asking, setAsking] = useState(false);
  const confirm = useMutation({ mutationFn: onConfirm, onSuccess: () => setAsking(false) });
  if (!asking) {
    return (
      <button type="button" className={toneClass[tone]} onClick={() => setAsking(true)}>
        {label}
      </button>
    );
  }
  return (
    <fieldset className={className ? `confirm ${className}` : "confirm"} aria-label={label}>
      {question ? <span className="small">{question}</span> : null}{" "}
      <button
        type="button"
        className="button small danger"
        disabled={confirm.isPending}
        onClick={() => confirm.mutate()}
      >
        {confirm.isPending ? busyLabel : confirmLabel}
      </button>{" "}
      <button
        type="button"
        className="button small ghost"
        disabled={confirm.isPending}
        onClick={() => {
          setAsking(false);
          confirm.reset();
        }}
      >
        {cancelLabel}
      </button>
      <ErrorNote error={confirm.error} title={errorTitle} />
    </fieldset>
  );
}
