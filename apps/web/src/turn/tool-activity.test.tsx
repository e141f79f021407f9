// The tool list: plain for short turns, virtualised for long ones, new calls shown at once.
import { render, screen } from "@testing-library/react";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyEvents, emptyTurnView } from "../live/turn-view.ts";
import { event, longTurn } from "../test/events.ts";
import { ToolActivityList, VIRTUALISE_FROM } from "./tool-activity.tsx";

// jsdom has no layout: give the scrolling list the height a browser would.
const clientHeight = Object.getOwnPropertyDescriptor(HTMLElement.prototype, "clientHeight");
const offsetHeight = Object.getOwnPropertyDescriptor(HTMLElement.prototype, "offsetHeight");
beforeAll(() => {
  Object.defineProperty(HTMLElement.prototype, "clientHeight", {
    configurable: true,
    get(this: HTMLElement) {
      return this.classList.contains("tool-list-virtual") ? 420 : 0;
    },
  });
  Object.defineProperty(HTMLElement.prototype, "offsetHeight", {
    configurable: true,
    get(this: HTMLElement) {
      return this.hasAttribute("data-index") ? 34 : 0;
    },
  });
});
afterAll(() => {
  if (clientHeight) Object.defineProperty(HTMLElement.prototype, "clientHeight", clientHeight);
  if (offsetHeight) Object.defineProperty(HTMLElement.prototype, "offsetHeight", offsetHeight);
});

describe("ToolActivityList", () => {
  it("says so when there are no tool calls yet", () => {
    render(<ToolActivityList tools={[]} />);
    expect(screen.getByText("No tool calls yet.")).toBeInTheDocument();
  });

  it("renders only a window of rows for a turn of 5,000 events", () => {
    const view = applyEvents(emptyTurnView(), longTurn(5000));
    expect(view.tools.length).toBeGreaterThan(VIRTUALISE_FROM);
    // Following the newest row needs real scrolling; the e2e bench covers it in Chromium.
    render(<ToolActivityList tools={view.tools} follow={false} />);
    const rendered = document.querySelectorAll(".tool-row");
    expect(rendered.length).toBeGreaterThan(5);
    expect(rendered.length).toBeLessThan(40);
    expect(rendered[0]).toHaveTextContent("npm test -- 1");
  });

  it("shows a new call at once in a short list", () => {
    let view = applyEvents(emptyTurnView(), longTurn(20));
    const { rerender } = render(<ToolActivityList tools={view.tools} />);
    view = applyEvents(view, [
      event(21, "tool_start", { callId: "newest", tool: "grep", params: { pattern: "TODO" } }),
    ]);
    rerender(<ToolActivityList tools={view.tools} />);
    expect(document.querySelector('[data-call-id="newest"]')).toHaveTextContent("grep");
    expect(screen.getByText("TODO")).toBeInTheDocument();
  });
});

describe("MCP tools in the activity list", () => {
  it("names the server and the tool, and keeps the full name at hand", () => {
    const view = applyEvents(emptyTurnView(), [
      event(1, "tool_start", {
        callId: "c1",
        tool: "mcp__github__create_issue",
        params: { title: "Bug" },
      }),
      event(2, "tool_result", {
        callId: "c1",
        tool: "mcp__github__create_issue",
        ok: true,
        summary: "mcp · github › create_issue: 12 characters",
      }),
      event(3, "tool_start", { callId: "c2", tool: "read_file", params: { path: "a.ts" } }),
    ]);
    render(<ToolActivityList tools={view.tools} />);
    const name = screen.getByText("mcp · github › create_issue");
    expect(name).toHaveAttribute("title", "mcp__github__create_issue");
    expect(screen.getByText("read_file")).toBeInTheDocument();
  });
});
