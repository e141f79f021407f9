// A turn's steps in tabs: its activity (reasoning, tool rows, verification), the agent's working
// document, the changes it made, and (for developers) its debug messages.
import type { ChatTurn } from "@gadget/protocol";
import { isFinalTurnStatus } from "@gadget/protocol";
import { useState } from "react";
import { DiffView } from "../components/diff-view.tsx";
import { Markdown } from "../components/markdown.tsx";
import type { TurnView } from "../live/turn-view.ts";
import { HookRuns } from "./hook-runs.tsx";
import { ToolActivityList } from "./tool-activity.tsx";

type Tab = "activity" | "document" | "changes" | "debug";

export function TurnSteps({
  turn,
  view,
  showDebug,
}: {
  turn: ChatTurn;
  view: TurnView;
  showDebug: boolean;
}) {
  const [tab, setTab] = useState<Tab>("activity");
  const final = isFinalTurnStatus(turn.status);
  const changeCount = view.changes?.files.length ?? turn.changes.length;
  const documentSections = view.document ? Object.entries(view.document) : [];
  return (
    <>
      <div className="tabs" role="tablist">
        {(
          [
            ["activity", `Activity (${view.tools.length})`],
            ["document", "Document"],
            ["changes", `Changes${changeCount ? ` (${changeCount})` : ""}`],
            ...(showDebug ? [["debug", `Debug (${view.debug.length})`]] : []),
          ] as [Tab, string][]
        ).map(([key, label]) => (
          <button
            key={key}
            type="button"
            role="tab"
            aria-selected={tab === key}
            className={`tab ${tab === key ? "tab-active" : ""}`}
            onClick={() => setTab(key)}
          >
            {label}
          </button>
        ))}
      </div>
      {tab === "activity" ? (
        <div className="tab-body">
          {view.thinking.length > 0 ? (
            <details className="thinking">
              <summary>
                Reasoning
                {!final &&
                turn.status !== "awaiting_approval" &&
                view.phase !== "awaiting_approval" &&
                view.thinking.at(-1)?.pass === view.pass
                  ? " (thinking…)"
                  : ""}
              </summary>
              {view.thinking.map((block) => (
                <div key={block.pass} className="thinking-block">
                  {view.thinking.length > 1 ? (
                    <div className="tool-detail-label">Pass {block.pass}</div>
                  ) : null}
                  <p>{block.text}</p>
                </div>
              ))}
            </details>
          ) : null}
          <ToolActivityList tools={view.tools} follow={!final} />
          <HookRuns runs={view.hooks} />
          {view.verification ? (
            <div className={`verification ${view.verification.ok ? "ok" : "bad"}`}>
              Verification {view.verification.ok ? "passed" : "failed"}:{" "}
              {view.verification.commands
                .map((command) => `${command.command} → ${command.exitCode ?? "?"}`)
                .join(", ")}
            </div>
          ) : null}
        </div>
      ) : null}
      {tab === "document" ? (
        <div className="tab-body document">
          {documentSections.length === 0 ? (
            <p className="muted">The agent has not written its working document yet.</p>
          ) : (
            documentSections.map(([name, text]) => (
              <section key={name}>
                <h4>{name}</h4>
                <Markdown source={text} />
              </section>
            ))
          )}
        </div>
      ) : null}
      {tab === "changes" ? (
        <div className="tab-body">
          {view.changes ? (
            <DiffView {...view.changes} />
          ) : turn.changes.length > 0 ? (
            <DiffView files={turn.changes} diff="" truncated={false} />
          ) : (
            <p className="muted">
              {final ? "This turn changed no files." : "Changes are listed when the turn ends."}
            </p>
          )}
        </div>
      ) : null}
      {tab === "debug" ? (
        <div className="tab-body">
          <pre className="tool-pre">
            {view.debug.map((entry) => `#${entry.seq} ${entry.message}`).join("\n")}
          </pre>
        </div>
      ) : null}
    </>
  );
}
