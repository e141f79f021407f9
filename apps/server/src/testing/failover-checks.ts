// What the user sees of a turn that a Redis failover cost nothing (the Cluster and Sentinel tests).
import { expect } from "vitest";
import type { StreamedTurn } from "./failover-turns.ts";

/** Completed; every event once and in order (seqs 1..N); the tokens as sent; dispatched once. */
export function expectWholeTurn(turn: StreamedTurn): void {
  expect(turn).toMatchObject({ status: "completed", response: "through the failover" });
  expect(turn.events.map((event) => event.seq)).toEqual(turn.events.map((_, index) => index + 1));
  const tokens = turn.events.filter((event) => event.type === "token");
  expect(tokens.map((event) => event.data.text)).toEqual(turn.sent);
  expect(turn.events.filter((event) => event.type === "done")).toHaveLength(1);
  expect(turn.events.filter((event) => event.type === "dispatched")).toHaveLength(1);
  expect(turn.workOrders).toBe(1);
  // Refused batches (sent again) only ever for an outage, never because the turn was lost.
  const outage = ["unavailable", "no answer", "conflict"];
  expect(turn.refusals.filter((code) => !outage.includes(code))).toEqual([]);
}
