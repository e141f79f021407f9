// Keeps the head and the tail of a command's output within a budget, counting what was left out.
import { countNewlines } from "./text.ts";

export interface OutputLimits {
  /** Characters kept in all (about bytes for ASCII), split evenly between head and tail. */
  maxBytes: number;
  /** Lines kept in all, split evenly between head and tail. */
  maxLines: number;
}

/** Accumulates streamed text and renders head + "… N lines omitted …" + tail. */
export class OutputCapture {
  private head = "";
  private headLines = 0;
  private headFull = false;
  private tailChunks: string[] = [];
  private tailLength = 0;
  private totalLength = 0;
  private totalNewlines = 0;
  private readonly headBytes: number;
  private readonly headLineLimit: number;
  private readonly tailBytes: number;
  private readonly tailLineLimit: number;

  constructor(limits: OutputLimits) {
    this.headBytes = Math.floor(limits.maxBytes / 2);
    this.headLineLimit = Math.floor(limits.maxLines / 2);
    this.tailBytes = limits.maxBytes - this.headBytes;
    this.tailLineLimit = limits.maxLines - this.headLineLimit;
  }

  write(text: string): void {
    this.totalLength += text.length;
    let rest = text;
    if (!this.headFull) {
      let taken = 0;
      while (taken < rest.length && !this.headFull) {
        const newline = rest.indexOf("\n", taken);
        const end = newline === -1 ? rest.length : newline + 1;
        const room = this.headBytes - this.head.length;
        if (end - taken > room) {
          this.head += rest.slice(taken, taken + room);
          taken += room;
          this.headFull = true;
          break;
        }
        this.head += rest.slice(taken, end);
        taken = end;
        if (newline !== -1) {
          this.headLines++;
          if (this.headLines >= this.headLineLimit) this.headFull = true;
        }
      }
      this.totalNewlines += countNewlines(rest.slice(0, taken));
      rest = rest.slice(taken);
      if (rest.length === 0) return;
    }
    this.totalNewlines += countNewlines(rest);
    this.tailChunks.push(rest);
    this.tailLength += rest.length;
    // Keep the tail buffer bounded; trimming to lines happens when rendering.
    while (this.tailLength > this.tailBytes * 2 && this.tailChunks.length > 1) {
      this.tailLength -= (this.tailChunks.shift() as string).length;
    }
    if (this.tailLength > this.tailBytes * 4) {
      const joined = this.tailChunks.join("").slice(-this.tailBytes * 2);
      this.tailChunks = [joined];
      this.tailLength = joined.length;
    }
  }

  /** Characters written in all. */
  get length(): number {
    return this.totalLength;
  }

  /** Whether render() leaves something out. */
  get truncated(): boolean {
    return this.head.length + this.tailCut().length < this.totalLength;
  }

  private tailCut(): string {
    const tail = this.tailChunks.join("");
    let text = tail.length > this.tailBytes ? tail.slice(-this.tailBytes) : tail;
    const lines = text.split("\n");
    // A trailing newline leaves an empty last element that is not a line.
    const lineCount = text.endsWith("\n") ? lines.length - 1 : lines.length;
    if (lineCount > this.tailLineLimit) {
      const keep = lines.slice(lines.length - this.tailLineLimit - (text.endsWith("\n") ? 1 : 0));
      text = keep.join("\n");
    }
    return text;
  }

  /** The kept output; when something was left out, a marker says how much. */
  render(): string {
    const tail = this.tailCut();
    const kept = this.head.length + tail.length;
    if (kept >= this.totalLength) return this.head + tail;
    const omittedLength = this.totalLength - kept;
    const omittedLines = Math.max(
      0,
      this.totalNewlines - countNewlines(this.head) - countNewlines(tail),
    );
    const separator = this.head.endsWith("\n") || this.head.length === 0 ? "" : "\n";
    return `${this.head}${separator}… [${omittedLines} lines (${omittedLength} characters) of output omitted] …\n${tail}`;
  }
}
