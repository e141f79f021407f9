// The benchmarks' one percentile: nearest rank, on unsorted input, at the edges.
import { describe, expect, it } from "vitest";
import { markdownTable, median, percentile, pool, summarize } from "./measure.ts";

describe("percentile", () => {
  const hundred = Array.from({ length: 100 }, (_, index) => 100 - index);

  it("takes the nearest rank of unsorted values", () => {
    expect(percentile(hundred, 50)).toBe(50);
    expect(percentile(hundred, 95)).toBe(95);
    expect(percentile(hundred, 99)).toBe(99);
    expect(percentile(hundred, 100)).toBe(100);
    expect(percentile([5, 1, 4, 2, 3], 50)).toBe(3);
  });

  it("gives the smallest value at 0, NaN for nothing, and leaves its input alone", () => {
    const values = [3, 1, 2];
    expect(percentile(values, 0)).toBe(1);
    expect(percentile([], 50)).toBeNaN();
    expect(values).toEqual([3, 1, 2]);
  });

  it("agrees with median and summarize", () => {
    expect(median([4, 1, 3, 2])).toBe(2);
    expect(summarize(hundred)).toEqual({ count: 100, p50: 50, p95: 95, p99: 99, max: 100 });
  });
});

describe("pool", () => {
  it("runs at most `limit` at a time and keeps the items' order", async () => {
    let running = 0;
    let most = 0;
    const results = await pool([30, 10, 20, 5, 15], 2, async (delay, index) => {
      running += 1;
      most = Math.max(most, running);
      await new Promise((resolve) => setTimeout(resolve, delay));
      running -= 1;
      return index;
    });
    expect(results).toEqual([0, 1, 2, 3, 4]);
    expect(most).toBe(2);
  });
});

describe("markdownTable", () => {
  it("prints a header, its rule and the rows", () => {
    expect(markdownTable(["a", "b"], [["1", "2"]])).toBe("| a | b |\n| --- | --- |\n| 1 | 2 |");
  });
});
