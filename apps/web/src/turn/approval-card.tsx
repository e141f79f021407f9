// An approval card: what the agent wants to do (tool, description, arguments) and Approve / Deny.
import { useMutation } from "@tanstack/react-query";
import { ErrorNote } from "../components/error-note.tsx";
import { toolLabel } from "../lib/format.ts";
import type { ApprovalItem } from "../live/turn-view.ts";

export interface ApprovalCardProps {
  approval: ApprovalItem;
  /**
   * Sends the decision; rejects with an error to show. `alwaysAllow` (a command's card only):
   * approve, and let the session run this exact command without asking again.
   */
  onDecide: (approve: boolean, alwaysAllow?: boolean) => Promise<void>;
  /** Offer "Always allow this command in this session" on a command's card (its caller sends it on). */
  offerAlwaysAllow?: boolean;
}

function paramsPreview(tool: string, params: unknown): { label: string; body: string }[] {
  if (typeof params !== "object" || params === null) {
    return [{ label: "Arguments", body: JSON.stringify(params ?? null, null, 2) }];
  }
  const record = params as Record<string, unknown>;
  if (tool === "write_file" && typeof record.content === "string") {
    return [
      { label: "File", body: String(record.path ?? "") },
      { label: "Content", body: record.content },
    ];
  }
  if (tool === "edit_file") {
    return [
      { label: "File", body: String(record.path ?? "") },
      { label: "Replace", body: String(record.old_string ?? "") },
      { label: "With", body: String(record.new_string ?? "") },
    ];
  }
  if (tool === "run_command" && typeof record.command === "string") {
    return [{ label: "Command", body: record.command }];
  }
  return [{ label: "Arguments", body: JSON.stringify(params, null, 2) }];
}

/** Shows one pending approval; after a decision it says which, and errors are shown in words. */
/** The exact command of a run_command card, which "always allow" names. */
function commandOf(approval: ApprovalItem): string | null {
  const params = approval.params as { command?: unknown } | null | undefined;
  return approval.tool === "run_command" && typeof params?.command === "string"
    ? params.command
    : null;
}

export function ApprovalCard({ approval, onDecide, offerAlwaysAllow = false }: ApprovalCardProps) {
  const command = offerAlwaysAllow ? commandOf(approval) : null;
  const decision = useMutation({
    mutationFn: ({ approve, alwaysAllow }: { approve: boolean; alwaysAllow: boolean }) =>
      onDecide(approve, alwaysAllow || undefined),
  });
  const decide = (approve: boolean, alwaysAllow = false) =>
    decision.mutate({ approve, alwaysAllow });
  const sent = decision.isSuccess ? decision.variables : null;
  const state = sent
    ? sent.approve
      ? sent.alwaysAllow
        ? "allowed"
        : "approved"
      : "denied"
    : null;
  const sending = decision.isPending;
  const decided = state !== null;
  return (
    <article className="approval-card" aria-label={`Approval for ${approval.tool}`}>
      <header>
        <span className="approval-tag">Needs your approval</span>
        <code className="approval-tool" title={approval.tool}>
          {toolLabel(approval.tool)}
        </code>
      </header>
      {approval.description ? <p className="approval-description">{approval.description}</p> : null}
      {paramsPreview(approval.tool, approval.params).map((part) => (
        <div key={part.label} className="approval-part">
          <div className="tool-detail-label">{part.label}</div>
          <pre className="tool-pre">{part.body}</pre>
        </div>
      ))}
      <ErrorNote error={decision.error} title="Your decision was not sent" />
      <footer>
        {decided ? (
          <span className={`decision decision-${state === "allowed" ? "approved" : state}`}>
            {state === "approved"
              ? "Approved. The agent goes on."
              : state === "allowed"
                ? "Approved, and always allowed in this session (see its settings)."
                : "Denied. The agent is told."}
          </span>
        ) : (
          <>
            <button
              type="button"
              className="button primary"
              disabled={sending}
              onClick={() => decide(true)}
            >
              Approve
            </button>
            {command ? (
              <button
                type="button"
                className="button"
                disabled={sending}
                title={`Runs ${command} without asking from now on, in this session only`}
                onClick={() => decide(true, true)}
              >
                Always allow this command in this session
              </button>
            ) : null}
            <button
              type="button"
              className="button danger"
              disabled={sending}
              onClick={() => decide(false)}
            >
              Deny
            </button>
          </>
        )}
      </footer>
    </article>
  );
}
