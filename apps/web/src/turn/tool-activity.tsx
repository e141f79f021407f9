// The tool activity list of a turn: one row per call (running, done, failed), virtualised so a
// turn with thousands of calls stays smooth; a row opens to show arguments and streamed output.
import { useVirtualizer } from "@tanstack/react-virtual";
import { memo, useEffect, useLayoutEffect, useRef, useState } from "react";
import { describeParams, formatElapsed, toolLabel } from "../lib/format.ts";
import type { ToolActivity } from "../live/turn-view.ts";

/** Lists up to this long render plainly; longer ones are virtualised. */
export const VIRTUALISE_FROM = 60;
const ROW_HEIGHT = 34;

const statusIcon: Record<ToolActivity["status"], string> = {
  running: "◌",
  done: "✓",
  failed: "✕",
};

const statusWord: Record<ToolActivity["status"], string> = {
  running: "running",
  done: "done",
  failed: "failed",
};

/** One tool call. Memoised: a row re-renders only when its own call changes. */
export const ToolRow = memo(function ToolRow({ tool }: { tool: ToolActivity }) {
  const [open, setOpen] = useState(false);
  const preview = describeParams(tool.params);
  // An MCP tool's label (server and tool) may take two lines in the name column.
  const mcp = tool.tool.startsWith("mcp__");
  return (
    <div className={`tool-row tool-${tool.status}`} data-call-id={tool.callId}>
      <button
        type="button"
        className="tool-row-head"
        aria-expanded={open}
        onClick={() => setOpen((value) => !value)}
      >
        <span className="tool-icon" role="img" aria-label={statusWord[tool.status]}>
          {statusIcon[tool.status]}
        </span>
        <span className={mcp ? "tool-name tool-name-mcp" : "tool-name"} title={tool.tool}>
          {toolLabel(tool.tool)}
        </span>
        <span className="tool-params" title={preview}>
          {preview}
        </span>
        <span className="tool-summary">
          {tool.status === "running" ? "running…" : (tool.summary ?? statusWord[tool.status])}
        </span>
        <span className="tool-time">
          {tool.durationMs !== null ? formatElapsed(tool.durationMs) : ""}
        </span>
      </button>
      {open ? (
        <div className="tool-detail">
          <div className="tool-detail-label">Arguments</div>
          <pre className="tool-pre">{JSON.stringify(tool.params ?? null, null, 2)}</pre>
          {tool.output ? (
            <>
              <div className="tool-detail-label">
                Output{tool.outputTruncated ? " (last part)" : ""}
              </div>
              <pre className="tool-pre tool-output">{tool.output}</pre>
            </>
          ) : null}
          {tool.summary ? (
            <>
              <div className="tool-detail-label">Result</div>
              <pre className="tool-pre">{tool.summary}</pre>
            </>
          ) : null}
        </div>
      ) : tool.status === "running" && tool.output ? (
        <pre className="tool-pre tool-output tool-output-tail">{lastLines(tool.output, 4)}</pre>
      ) : null}
    </div>
  );
});

function lastLines(text: string, count: number): string {
  const lines = text.replace(/\n$/, "").split("\n");
  return lines.slice(-count).join("\n");
}

export interface ToolActivityListProps {
  tools: ToolActivity[];
  /** Keep the newest row in view while the turn runs (stops once the user scrolls up). */
  follow?: boolean;
}

/** Tool rows, virtualised past VIRTUALISE_FROM rows. */
export function ToolActivityList({ tools, follow = true }: ToolActivityListProps) {
  if (tools.length === 0) return <p className="muted">No tool calls yet.</p>;
  if (tools.length < VIRTUALISE_FROM) {
    return (
      <div className="tool-list" data-testid="tool-list">
        {tools.map((tool) => (
          <ToolRow key={tool.callId} tool={tool} />
        ))}
      </div>
    );
  }
  return <VirtualToolList tools={tools} follow={follow} />;
}

function VirtualToolList({ tools, follow }: { tools: ToolActivity[]; follow: boolean }) {
  const scrollRef = useRef<HTMLDivElement>(null);
  const atBottom = useRef(true);
  const virtualizer = useVirtualizer({
    count: tools.length,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 8,
    getItemKey: (index) => tools[index]?.callId ?? index,
    initialRect: { width: 800, height: 480 },
  });
  useLayoutEffect(() => {
    if (follow && atBottom.current && tools.length > 0) {
      virtualizer.scrollToIndex(tools.length - 1, { align: "end" });
    }
  }, [tools.length, follow, virtualizer]);
  useEffect(() => {
    const element = scrollRef.current;
    if (!element) return;
    const onScroll = () => {
      atBottom.current = element.scrollHeight - element.scrollTop - element.clientHeight < 48;
    };
    element.addEventListener("scroll", onScroll, { passive: true });
    return () => element.removeEventListener("scroll", onScroll);
  }, []);
  const items = virtualizer.getVirtualItems();
  return (
    <div ref={scrollRef} className="tool-list tool-list-virtual" data-testid="tool-list">
      <div style={{ height: virtualizer.getTotalSize(), position: "relative" }}>
        {items.map((item) => {
          const tool = tools[item.index];
          if (!tool) return null;
          return (
            <div
              key={item.key}
              data-index={item.index}
              ref={virtualizer.measureElement}
              style={{
                position: "absolute",
                top: 0,
                left: 0,
                right: 0,
                transform: `translateY(${item.start}px)`,
              }}
            >
              <ToolRow tool={tool} />
            </div>
          );
        })}
      </div>
    </div>
  );
}
