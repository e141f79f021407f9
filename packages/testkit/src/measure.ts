// What every benchmark measures with: one percentile (nearest rank), so a p95 printed by one
// package's benchmark means the same as another's, and the small timing and memory helpers
// they all used to write for themselves.
import { readFile } from "node:fs/promises";

/**
 * The nearest-rank percentile: the smallest value with at least `p` percent of the values at or
 * below it. NaN for no values.
 * @example percentile([5, 1, 4, 2, 3], 50) // 3
 */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((left, right) => left - right);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

/** The 50th percentile (the lower middle value of an even count). */
export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

export interface Summary {
  count: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

/** The percentiles a benchmark table prints, in one pass over one sort. */
export function summarize(values: readonly number[]): Summary {
  return {
    count: values.length,
    p50: percentile(values, 50),
    p95: percentile(values, 95),
    p99: percentile(values, 99),
    max: values.length === 0 ? Number.NaN : Math.max(...values),
  };
}

/** Milliseconds since an arbitrary start, with sub-millisecond resolution. */
export const now = (): number => performance.now();

export const sleep = (ms: number): Promise<void> =>
  new Promise((resolve) => setTimeout(resolve, ms));

/** How long `work` takes, in milliseconds. */
export async function time(work: () => unknown): Promise<number> {
  const started = now();
  await work();
  return now() - started;
}

/** "12.3 ms". */
export const ms = (value: number, digits = 1): string => `${value.toFixed(digits)} ms`;

/** Runs `work` over `items` with at most `limit` at a time; results in the items' order. */
export async function pool<T, R>(
  items: readonly T[],
  limit: number,
  work: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const index = next++;
        results[index] = await work(items[index]!, index);
      }
    }),
  );
  return results;
}

/** A process's resident memory in MiB, from /proc (Linux). */
export async function rssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN) / 1024;
}

/** A Markdown table: the form every benchmark prints its figures in. */
export function markdownTable(headers: readonly string[], rows: readonly string[][]): string {
  const line = (cells: readonly string[]) => `| ${cells.join(" | ")} |`;
  return [line(headers), line(headers.map(() => "---")), ...rows.map(line)].join("\n");
}
