// What a developer sees in the drone's terminal: on a TTY a live status line per active turn
// (and a progress bar while cloning); elsewhere plain lines.
import { formatDuration } from "@gadget/protocol";
import type { TurnProgress } from "./turn/progress.ts";

export interface Output {
  write(text: string): void;
  isTTY?: boolean;
}

const percentPattern = /(\d{1,3})%$/;

/** One status line: "[demo] pass 3 · run_command · 12.3k tokens · $0.0123 · 1m 05s". */
export function statusLine(progress: TurnProgress, now = Date.now()): string {
  const parts = [`[${progress.project}]`];
  const percent =
    progress.phase === "workspace" ? percentPattern.exec(progress.detail ?? "") : null;
  if (percent) {
    const filled = Math.round(Number(percent[1]) / 10);
    parts.push(`${"█".repeat(filled)}${"░".repeat(10 - filled)} ${progress.detail}`);
  } else {
    parts.push(progress.pass > 0 ? `pass ${progress.pass}` : progress.phase);
    if (progress.tool) parts.push(progress.tool);
  }
  const tokens =
    progress.tokens >= 1000 ? `${(progress.tokens / 1000).toFixed(1)}k` : String(progress.tokens);
  parts.push(
    `${tokens} tokens`,
    `$${progress.cost.toFixed(4)}`,
    formatDuration(now - progress.startedAt),
  );
  return parts.join(" · ");
}

/** Prints messages and, on a TTY, keeps the active turns' status lines at the bottom. */
export class Terminal {
  private active = new Map<string, TurnProgress>();
  private drawn = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly output: Output) {
    if (output.isTTY) {
      // Elapsed time moves even when nothing happens.
      this.timer = setInterval(() => this.redraw(), 1000);
      this.timer.unref();
    }
  }

  /** A line for people ("connected to …", "turn … completed"). */
  say(message: string): void {
    const stamp = new Date().toISOString().slice(11, 19);
    if (!this.output.isTTY) {
      this.output.write(`${stamp} ${message}\n`);
      return;
    }
    this.clear();
    this.output.write(`${stamp} ${message}\n`);
    this.draw();
  }

  progress(progress: TurnProgress): void {
    this.active.set(progress.turnId, progress);
    if (this.output.isTTY) this.redraw();
  }

  finished(turnId: string): void {
    this.active.delete(turnId);
    if (this.output.isTTY) this.redraw();
  }

  close(): void {
    clearInterval(this.timer);
    if (this.output.isTTY) this.clear();
  }

  private redraw(): void {
    this.clear();
    this.draw();
  }

  private clear(): void {
    if (this.drawn > 0) this.output.write(`\x1b[${this.drawn}A\x1b[0J`);
    this.drawn = 0;
  }

  private draw(): void {
    const lines = [...this.active.values()].map((progress) => statusLine(progress));
    if (lines.length === 0) return;
    this.output.write(`${lines.join("\n")}\n`);
    this.drawn = lines.length;
  }
}
