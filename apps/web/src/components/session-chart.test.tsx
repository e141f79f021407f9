// The session chart: one bar per turn for tokens and cost, one per pass for time.
import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { applyEvents, emptyTurnView } from "../live/turn-view.ts";
import { event, turnRecord } from "../test/events.ts";
import { chartSeries, SessionChart } from "./session-chart.tsx";

const start = Date.UTC(2025, 0, 1);
const past = {
  turn: turnRecord({
    _id: "t1",
    status: "completed" as const,
    stats: {
      toolCallCount: 3,
      inputTokens: 2000,
      thinkingTokenCount: 0,
      responseTokens: 500,
      durationMs: 9000,
      durationLabel: "9s",
      passes: 3,
      cost: 0.02,
    },
  }),
  view: emptyTurnView(),
  eventsLoaded: false,
  loadError: null,
};
const live = {
  turn: turnRecord({ _id: "t2", status: "processing" as const }),
  view: applyEvents(emptyTurnView(), [
    event(1, "status", { message: "Pass 1", pass: 1 }, start),
    event(2, "status", { message: "Pass 2", pass: 2 }, start + 2000),
    event(
      3,
      "cost_update",
      { totalCost: 0.01, tokens: { input: 800, output: 100, reasoning: 0, cached: 0 } },
      start + 2500,
    ),
  ]),
  eventsLoaded: true,
  loadError: null,
};

describe("SessionChart", () => {
  it("has a bar per turn for tokens and cost, and per pass for time (averages for unread turns)", () => {
    const series = chartSeries([past, live], start + 5000);
    expect(series.tokens.map((bar) => bar.value)).toEqual([2500, 900]);
    expect(series.cost.map((bar) => bar.value)).toEqual([0.02, 0.01]);
    expect(series.passes.map((bar) => bar.value)).toEqual([3000, 2000, 3000]);
    expect(series.tokens[1]?.highlight).toBe(true);
  });

  it("draws the three charts with readable labels", () => {
    render(<SessionChart snapshots={[past, live]} now={start + 5000} />);
    expect(screen.getByRole("img", { name: "Tokens per turn: 2.5k, 900" })).toBeInTheDocument();
    expect(
      screen.getByRole("img", { name: "Cost per turn: $0.0200, $0.0100" }),
    ).toBeInTheDocument();
    expect(screen.getByText("Time per pass")).toBeInTheDocument();
  });

  it("says — for cost when no turn's provider has prices, not $0.00", () => {
    const unpriced = {
      ...past,
      turn: turnRecord({
        _id: "t3",
        status: "completed",
        stats: { ...past.turn.stats, cost: 0, priced: false },
      }),
    };
    render(<SessionChart snapshots={[unpriced]} now={start + 5000} />);
    expect(screen.getByRole("img", { name: "Cost per turn: —" })).toBeInTheDocument();
    expect(screen.queryByText(/\$0\.00/)).toBeNull();
  });
});
