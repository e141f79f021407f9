// An approval card: what the agent wants to do (tool, description, arguments) and Approve / Deny.
import { useState } from "react";
import { ErrorNote } from "../components/error-note.tsx";
import { toolLabel } from "../lib/format.ts";
import type { ApprovalItem } from "../live/turn-view.ts";

export interface ApprovalCardProps {
  approval: ApprovalItem;
  /** Sends the decision; rejects with an error to show. */
  onDecide: (approve: boolean) => Promise<void>;
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
export function ApprovalCard({ approval, onDecide }: ApprovalCardProps) {
  const [state, setState] = useState<"idle" | "sending" | "approved" | "denied">("idle");
  const [error, setError] = useState<unknown>(null);
  const decide = async (approve: boolean) => {
    setState("sending");
    setError(null);
    try {
      await onDecide(approve);
      setState(approve ? "approved" : "denied");
    } catch (caught) {
      setError(caught);
      setState("idle");
    }
  };
  const decided = state === "approved" || state === "denied";
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
      <ErrorNote error={error} title="Your decision was not sent" />
      <footer>
        {decided ? (
          <span className={`decision decision-${state}`}>
            {state === "approved" ? "Approved. The agent goes on." : "Denied. The agent is told."}
          </span>
        ) : (
          <>
            <button
              type="button"
              className="button primary"
              disabled={state === "sending"}
              onClick={() => decide(true)}
            >
              Approve
            </button>
            <button
              type="button"
              className="button danger"
              disabled={state === "sending"}
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
