// A tiny SVG bar chart: one row of bars with a label, the largest value and a tooltip per bar.
export interface Bar {
  key: string;
  value: number;
  /** Tooltip text for this bar. */
  title: string;
  /** Draws the bar in the accent colour (e.g. the live turn). */
  highlight?: boolean;
}

export interface BarChartProps {
  label: string;
  bars: Bar[];
  format: (value: number) => string;
  height?: number;
}

/** Bars scaled to the largest value; the row keeps its size however many bars there are. */
export function BarChart({ label, bars, format, height = 44 }: BarChartProps) {
  const max = Math.max(0, ...bars.map((bar) => bar.value));
  const width = 240;
  const gap = bars.length > 40 ? 1 : 2;
  const barWidth =
    bars.length > 0 ? Math.max(1, (width - gap * (bars.length - 1)) / bars.length) : 0;
  return (
    <figure className="bar-chart">
      <figcaption>
        <span>{label}</span>
        <span className="muted">{bars.length > 0 ? `max ${format(max)}` : "no data yet"}</span>
      </figcaption>
      <svg
        viewBox={`0 0 ${width} ${height}`}
        width="100%"
        height={height}
        preserveAspectRatio="none"
        role="img"
        aria-label={`${label}: ${bars.map((bar) => format(bar.value)).join(", ")}`}
      >
        <line x1="0" x2={width} y1={height - 0.5} y2={height - 0.5} className="chart-axis" />
        {bars.map((bar, index) => {
          const barHeight = max > 0 ? Math.max(1, (bar.value / max) * (height - 2)) : 1;
          return (
            <rect
              key={bar.key}
              x={index * (barWidth + gap)}
              y={height - barHeight}
              width={barWidth}
              height={barHeight}
              rx={Math.min(2, barWidth / 3)}
              className={bar.highlight ? "chart-bar chart-bar-live" : "chart-bar"}
            >
              <title>{bar.title}</title>
            </rect>
          );
        })}
      </svg>
    </figure>
  );
}
