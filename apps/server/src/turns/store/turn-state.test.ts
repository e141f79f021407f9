// How events move a ChatTurn's status and stats.
import { agentEvent, emptyTurnStats } from "@gadget/protocol";
import { describe, expect, it } from "vitest";
import { applyEvents, type TurnState } from "./turn-state.ts";

const fresh = (): TurnState => ({
  status: "dispatched",
  stats: emptyTurnStats(),
  response: null,
  error: null,
  exitReason: null,
  changes: [],
  branch: null,
  commit: null,
  delivery: null,
  pendingApprovals: [],
  createdAt: new Date(0),
  startedAt: new Date(1000),
  finishedAt: null,
  leaseExpiresAt: new Date(5000),
  waiting: null,
  quotaWait: null,
});

describe("applyEvents", () => {
  it("moves to processing, then awaiting_approval until the approved call starts", () => {
    const now = new Date(2000);
    let state = applyEvents(fresh(), [agentEvent("status", { message: "Pass 1", pass: 1 })], now);
    expect(state.status).toBe("processing");
    state = applyEvents(
      state,
      [
        agentEvent("approval", {
          approvals: [{ id: "a", callId: "c1", tool: "write_file", params: {}, description: "" }],
        }),
      ],
      now,
    );
    expect(state.status).toBe("awaiting_approval");
    state = applyEvents(
      state,
      [agentEvent("tool_start", { callId: "c1", tool: "write_file", params: {} })],
      now,
    );
    expect(state).toMatchObject({
      status: "processing",
      pendingApprovals: [],
      stats: { toolCallCount: 1 },
    });
  });

  it("keeps a rate-limit wait for a resumed turn after the events that end it on screen", () => {
    const wait = { since: "2026-01-01T00:00:00.000Z", until: "2026-01-01T00:01:00.000Z" };
    const waiting = applyEvents(
      fresh(),
      [agentEvent("quota_wait", { ...wait, message: "" })],
      new Date(2000),
    );
    expect(waiting.waiting).toMatchObject({ reason: "provider_rate_limit" });
    const lost = applyEvents(
      waiting,
      [agentEvent("drone_lost", { drone: "d", since: wait.since, graceMs: 1000 })],
      new Date(3000),
    );
    expect(lost.waiting).toBeNull();
    expect(lost.quotaWait).toEqual({ since: new Date(wait.since), until: new Date(wait.until) });
  });

  it("keeps whether the provider priced the turn: without prices its cost is unknown", () => {
    const tokens = { input: 10, output: 5, reasoning: 0, cached: 0 };
    const unpriced = applyEvents(
      fresh(),
      [agentEvent("cost_update", { totalCost: 0, tokens, priced: false })],
      new Date(2000),
    );
    expect(unpriced.stats).toMatchObject({ cost: 0, priced: false, inputTokens: 10 });
    const priced = applyEvents(
      fresh(),
      [agentEvent("cost_update", { totalCost: 0.01, tokens, priced: true })],
      new Date(2000),
    );
    expect(priced.stats).toMatchObject({ cost: 0.01, priced: true });
  });

  it("ends with the status of the done reason and the final stats", () => {
    const state = applyEvents(
      fresh(),
      [
        agentEvent("error", { code: "provider_error", message: "boom" }),
        agentEvent("done", { reason: "error", passes: 3, totalCost: 0.5 }),
        agentEvent("response", { message: "ignored after the end" }),
      ],
      new Date(66_000),
    );
    expect(state).toMatchObject({
      status: "failed",
      exitReason: "error",
      error: { code: "provider_error", message: "boom" },
      response: null,
      stats: { passes: 3, cost: 0.5, durationMs: 65_000, durationLabel: "1m 05s" },
      leaseExpiresAt: null,
    });
    expect(
      applyEvents(
        fresh(),
        [agentEvent("done", { reason: "max_passes", passes: 9, totalCost: 0 })],
        new Date(2000),
      ).status,
    ).toBe("completed");
  });

  it("an interrupted turn says why even when no error event came before its end", () => {
    const stopped = applyEvents(
      fresh(),
      [agentEvent("done", { reason: "drone_shutdown", passes: 2, totalCost: 0 })],
      new Date(2000),
    );
    expect(stopped.status).toBe("interrupted");
    expect(stopped.error?.code).toBe("interrupted");
    expect(stopped.error?.message).toMatch(/drone .* shut down/);
    // An error the turn already carries is its cause, kept as it was.
    const known = applyEvents(
      fresh(),
      [
        agentEvent("error", { code: "worktree_busy", message: "another turn holds it" }),
        agentEvent("done", { reason: "interrupted", passes: 1, totalCost: 0 }),
      ],
      new Date(2000),
    );
    expect(known.error).toEqual({ code: "worktree_busy", message: "another turn holds it" });
  });

  it("records the delivery: pushed with its time, or the reason in words", () => {
    const now = new Date(3000);
    const pushed = applyEvents(
      fresh(),
      [agentEvent("delivery", { branch: "gadget/fix-a1b2c3", commit: "abc123", pushed: true })],
      now,
    );
    expect(pushed.delivery).toEqual({
      branch: "gadget/fix-a1b2c3",
      commit: "abc123",
      pushedAt: now,
      pullRequestUrl: null,
      error: null,
    });
    const failed = applyEvents(
      fresh(),
      [
        agentEvent("delivery", {
          branch: "gadget/fix-a1b2c3",
          commit: "abc123",
          pushed: false,
          error: "authentication failed for origin",
        }),
        agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }),
      ],
      now,
    );
    expect(failed.status).toBe("completed");
    expect(failed.delivery?.pushedAt).toBeNull();
    expect(failed.delivery?.error).toBe("authentication failed for origin");
  });
});
