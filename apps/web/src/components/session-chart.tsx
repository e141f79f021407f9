// The per-session chart: tokens and cost per turn, and time per pass — a glance instead of a table.
import { formatCost, formatElapsed, formatTokens, timeOf } from "../lib/format.ts";
import type { TurnSnapshot } from "../live/turn-store.ts";
import { costUnknown, passDurations, totalTokens } from "../live/turn-view.ts";
import { type Bar, BarChart } from "./bar-chart.tsx";

function turnTokens({ turn, view }: TurnSnapshot): number {
  const stats = turn.stats;
  return Math.max(
    totalTokens(view),
    stats.inputTokens + stats.responseTokens + stats.thinkingTokenCount,
  );
}

function turnCost({ turn, view }: TurnSnapshot): number {
  return Math.max(view.cost?.totalCost ?? 0, view.done?.totalCost ?? 0, turn.stats.cost);
}

/** Bars of the three series, computed from turn snapshots (exported for tests). */
export function chartSeries(snapshots: TurnSnapshot[], now: number) {
  const tokens: Bar[] = [];
  const cost: Bar[] = [];
  snapshots.forEach((snapshot, index) => {
    const live = !["completed", "failed", "cancelled", "interrupted"].includes(
      snapshot.turn.status,
    );
    const label = `Turn ${index + 1}`;
    const turnTokensValue = turnTokens(snapshot);
    const turnCostValue = turnCost(snapshot);
    tokens.push({
      key: snapshot.turn._id,
      value: turnTokensValue,
      title: `${label}: ${formatTokens(turnTokensValue)} tokens`,
      highlight: live,
    });
    cost.push({
      key: snapshot.turn._id,
      value: turnCostValue,
      title: `${label}: ${costUnknown(snapshot.turn, snapshot.view) ? "cost unknown (no prices)" : formatCost(turnCostValue)}`,
      highlight: live,
    });
  });
  // Time per pass: every pass of turns whose steps are known; other turns by their average.
  const passes: Bar[] = [];
  snapshots.forEach((snapshot, index) => {
    const { turn, view } = snapshot;
    if (view.passes.length > 0) {
      const live = !["completed", "failed", "cancelled", "interrupted"].includes(turn.status);
      const end = timeOf(turn.finishedAt) ?? (live ? now : (view.lastEventAt ?? now));
      passDurations(view, end).forEach((duration, passIndex) => {
        passes.push({
          key: `${turn._id}:${passIndex}`,
          value: duration,
          title: `Turn ${index + 1}, pass ${passIndex + 1}: ${formatElapsed(duration)}`,
          highlight: live,
        });
      });
    } else if (turn.stats.passes > 0 && turn.stats.durationMs > 0) {
      const average = turn.stats.durationMs / turn.stats.passes;
      passes.push({
        key: `${turn._id}:average`,
        value: average,
        title: `Turn ${index + 1}: ${formatElapsed(average)} per pass on average (${turn.stats.passes} passes)`,
      });
    }
  });
  return { tokens, cost, passes };
}

export function SessionChart({ snapshots, now }: { snapshots: TurnSnapshot[]; now: number }) {
  const series = chartSeries(snapshots, now);
  // Without prices a turn's cost reads 0: the chart says "—" rather than "$0.00" then.
  const unpriced =
    snapshots.length > 0 &&
    snapshots.every((snapshot) => costUnknown(snapshot.turn, snapshot.view));
  return (
    <section className="session-chart" aria-label="Session chart">
      <BarChart label="Tokens per turn" bars={series.tokens} format={formatTokens} />
      <BarChart
        label="Cost per turn"
        bars={series.cost}
        format={unpriced ? () => "—" : formatCost}
      />
      <BarChart label="Time per pass" bars={series.passes} format={formatElapsed} />
    </section>
  );
}
