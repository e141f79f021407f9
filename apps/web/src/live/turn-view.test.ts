// The turn-view reducer: order, duplicates, gaps, long turns, and what each event shows.
import type { TurnEvent } from "@gadget/protocol";
import { describe, expect, it } from "vitest";
import { event, longTurn, numbered } from "../test/events.ts";
import {
  applyEvent,
  applyEvents,
  emptyTurnView,
  gapAfter,
  MAX_TOOL_OUTPUT,
  passDurations,
  pendingApprovals,
  type TurnView,
  totalTokens,
} from "./turn-view.ts";

/** A seeded shuffle, so a failure can be replayed. */
function shuffle<T>(items: T[], seed: number): T[] {
  const copy = items.slice();
  let state = seed;
  for (let index = copy.length - 1; index > 0; index -= 1) {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    const other = state % (index + 1);
    [copy[index], copy[other]] = [copy[other]!, copy[index]!];
  }
  return copy;
}

function oneByOne(events: TurnEvent[], start: TurnView = emptyTurnView()): TurnView {
  return events.reduce(applyEvent, start);
}

const basic = numbered([
  ["queued", {}],
  ["dispatched", { droneId: "d1", droneName: "laptop" }],
  ["status", { message: "Pass 1: reading", pass: 1, model: "small" }],
  ["thinking", { text: "I should read " }],
  ["thinking", { text: "the test." }],
  ["tool_start", { callId: "c1", tool: "read_file", params: { path: "src/a.ts" } }],
  ["tool_result", { callId: "c1", tool: "read_file", ok: true, summary: "42 lines" }],
  ["status", { message: "Pass 2: escalating", pass: 2, model: "large" }],
  ["token", { text: "The fix " }],
  ["token", { text: "is done." }],
  [
    "cost_update",
    { totalCost: 0.0123, tokens: { input: 900, output: 120, reasoning: 30, cached: 0 } },
  ],
  ["response", { message: "The fix is **done**." }],
  ["done", { reason: "completed", passes: 2, totalCost: 0.0123 }],
]);

describe("turn view", () => {
  it("shows a turn's progress: passes, model, escalations, thinking, tools, cost and answer", () => {
    const view = applyEvents(emptyTurnView(), basic);
    expect(view.lastSeq).toBe(13);
    expect(view.droneName).toBe("laptop");
    expect(view.pass).toBe(2);
    expect(view.model).toBe("large");
    expect(view.escalations).toBe(1);
    expect(view.thinking).toEqual([{ pass: 1, text: "I should read the test." }]);
    expect(view.tools).toHaveLength(1);
    expect(view.tools[0]).toMatchObject({
      tool: "read_file",
      status: "done",
      summary: "42 lines",
      pass: 1,
    });
    expect(view.draft).toBe("The fix is done.");
    expect(view.response).toBe("The fix is **done**.");
    expect(totalTokens(view)).toBe(1020);
    expect(view.done).toMatchObject({ reason: "completed", passes: 2 });
    expect(view.phase).toBe("finished");
  });

  it("keeps a drone's warning (no sandbox) apart from the status line, once", () => {
    const warning =
      "This drone runs commands without a sandbox (it was started with --no-sandbox).";
    const view = applyEvents(
      emptyTurnView(),
      numbered([
        ["status", { message: warning, phase: "sandbox", level: "warning" }],
        ["status", { message: "Pass 1", pass: 1 }],
        ["status", { message: warning, phase: "sandbox", level: "warning" }],
      ]),
    );
    expect(view.warnings).toEqual([warning]);
    expect(view.statusMessage).toBe("Pass 1");
  });

  it("lists the hooks that ran, in order, with the pass they ran in, once each", () => {
    const blocked = {
      event: "PreToolUse",
      command: "node .gadget/guard.mjs",
      ok: true,
      outcome: "blocked",
      ms: 40,
      output: "no rm",
      callId: "c1",
      tool: "run_command",
    } as const;
    const events = numbered([
      ["status", { message: "Pass 1", pass: 1 }],
      ["hook", blocked],
      ["tool_start", { callId: "c1", tool: "run_command", params: { command: "rm x" } }],
      ["tool_result", { callId: "c1", tool: "run_command", ok: false, summary: "blocked" }],
      ["status", { message: "Pass 2", pass: 2 }],
      [
        "hook",
        { event: "Stop", command: "npm test", ok: true, outcome: "continue", ms: 900, output: "" },
      ],
    ]);
    const view = applyEvents(applyEvents(emptyTurnView(), events), events);
    expect(view.hooks).toEqual([
      { ...blocked, seq: 2, pass: 1 },
      expect.objectContaining({ event: "Stop", outcome: "continue", seq: 6, pass: 2 }),
    ]);
  });

  it("lists each way the drone adapted its requests to the provider, once per quirk", () => {
    const message = "Unsupported value: 'temperature' does not support 0.2 with this model.";
    const view = applyEvents(
      emptyTurnView(),
      numbered([
        ["status", { message: "Pass 1", pass: 1 }],
        ["provider_adapted", { quirk: "no_temperature", message }],
        ["provider_adapted", { quirk: "no_temperature", message }],
        [
          "provider_adapted",
          { quirk: "max_completion_tokens", message: "Use max_completion_tokens" },
        ],
      ]),
    );
    expect(view.adaptations.map((adaptation) => adaptation.quirk)).toEqual([
      "no_temperature",
      "max_completion_tokens",
    ]);
    expect(view.statusMessage).toBe("Pass 1");
  });

  it("drops what a failed model call streamed when the call is sent again", () => {
    const view = applyEvents(
      emptyTurnView(),
      numbered([
        ["status", { message: "Pass 1", pass: 1, phase: "model" }],
        ["token", { text: "Checked. " }],
        ["status", { message: "Pass 2", pass: 2, phase: "model" }],
        ["thinking", { text: "Half a thou" }],
        ["token", { text: "The answ" }],
        ["status", { message: "Model call failed (HTTP 503); retrying in 1 s", phase: "retry" }],
        ["thinking", { text: "A whole thought." }],
        ["token", { text: "The answer." }],
      ]),
    );
    // Each pass's narration is its own paragraph, also after a retry cut the failed attempt.
    expect(view.draft).toBe("Checked. \n\nThe answer.");
    expect(view.thinking).toEqual([{ pass: 2, text: "A whole thought." }]);
  });

  it("shows the drone offline until the turn goes out again, never gluing the cut pass's text", () => {
    const since = "2025-01-01T00:00:00.000Z";
    const lost = applyEvents(
      emptyTurnView(),
      numbered([
        ["dispatched", { droneId: "d1", droneName: "laptop" }],
        ["status", { message: "Pass 1", pass: 1, phase: "model" }],
        ["token", { text: "Checked. " }],
        ["status", { message: "Pass 2", pass: 2, phase: "model" }],
        ["token", { text: "Running the long jo" }],
        ["drone_lost", { drone: "d1", droneName: "laptop", since, graceMs: 60_000 }],
      ]),
    );
    expect(lost.droneLost).toEqual({
      since: Date.parse(since),
      until: Date.parse(since) + 60_000,
      droneName: "laptop",
    });
    // The drone restarted: the server drops the cut pass (`retry`) and sends the turn again.
    const view = applyEvents(
      lost,
      numbered(
        [
          ["status", { message: "The pass that was cut starts again", phase: "retry" }],
          ["queued", { message: "laptop restarted; it goes on with this turn" }],
          ["dispatched", { droneId: "d1", droneName: "laptop" }],
          ["status", { message: "Pass 2", pass: 2, phase: "model" }],
          ["token", { text: "Finished." }],
        ],
        7,
      ),
    );
    expect(view.droneLost).toBeNull();
    expect(view.draft).not.toContain("Running the long");
    expect(view.draft).toBe("Checked. \n\nFinished.");
  });

  it("ignores events it has already applied and returns the same view", () => {
    const view = applyEvents(emptyTurnView(), basic);
    expect(applyEvent(view, basic[4]!)).toBe(view);
    expect(applyEvents(view, basic)).toBe(view);
    expect(view.eventCount).toBe(13);
  });

  it("holds events that arrive past a gap and applies them once the gap fills", () => {
    let view = applyEvents(emptyTurnView(), basic.slice(0, 3));
    view = applyEvents(view, [basic[5]!, basic[6]!]);
    expect(view.lastSeq).toBe(3);
    expect(view.tools).toHaveLength(0);
    expect(gapAfter(view)).toBe(3);
    view = applyEvent(view, basic[4]!);
    expect(gapAfter(view)).toBe(3);
    view = applyEvent(view, basic[3]!);
    expect(gapAfter(view)).toBeNull();
    expect(view.lastSeq).toBe(7);
    expect(view.thinking[0]?.text).toBe("I should read the test.");
    expect(view.tools[0]?.status).toBe("done");
  });

  it("ends the same whatever the order and however often events repeat (5,000 events)", () => {
    const events = longTurn(5000);
    const expected = applyEvents(emptyTurnView(), events);
    expect(expected.lastSeq).toBe(5000);
    const scrambled = shuffle([...events, ...events.filter((_, index) => index % 3 === 0)], 7);
    const fromScrambled = oneByOne(scrambled);
    expect(fromScrambled).toEqual(expected);
    // Batches of any size agree with single events.
    const batches: TurnEvent[][] = [];
    for (let index = 0; index < scrambled.length; index += 137) {
      batches.push(scrambled.slice(index, index + 137));
    }
    expect(batches.reduce(applyEvents, emptyTurnView())).toEqual(expected);
  });

  it("after a reload, a replay from 0 over live state adds nothing and later events continue", () => {
    const events = longTurn(400);
    const live = applyEvents(emptyTurnView(), events.slice(0, 250));
    const replayed = applyEvents(live, events.slice(0, 300));
    expect(replayed.lastSeq).toBe(300);
    expect(replayed.tools.length).toBe(
      applyEvents(emptyTurnView(), events.slice(0, 300)).tools.length,
    );
    const callIds = replayed.tools.map((tool) => tool.callId);
    expect(new Set(callIds).size).toBe(callIds.length);
    expect(applyEvents(replayed, events.slice(300))).toEqual(applyEvents(emptyTurnView(), events));
  });

  it("streams command output into its tool row and keeps only the tail of very long output", () => {
    const chunk = "x".repeat(1000);
    const events = [
      event(1, "tool_start", {
        callId: "run",
        tool: "run_command",
        params: { command: "npm test" },
      }),
      ...Array.from({ length: 70 }, (_, index) =>
        event(index + 2, "tool_output", { callId: "run", stream: "stdout", text: chunk }),
      ),
      event(72, "tool_output", { callId: "run", stream: "stderr", text: "THE END" }),
    ];
    const view = applyEvents(emptyTurnView(), events);
    const tool = view.tools[0]!;
    expect(tool.status).toBe("running");
    expect(tool.output.length).toBe(MAX_TOOL_OUTPUT);
    expect(tool.outputTruncated).toBe(true);
    expect(tool.output.endsWith("THE END")).toBe(true);
  });

  it("marks a failed tool and gives a row to a result whose start it never saw", () => {
    const view = applyEvents(
      emptyTurnView(),
      numbered([
        ["tool_start", { callId: "a", tool: "run_command", params: { command: "false" } }],
        ["tool_result", { callId: "a", tool: "run_command", ok: false, summary: "exit 1" }],
        ["tool_result", { callId: "b", tool: "grep", ok: true, summary: "3 matches" }],
      ]),
    );
    expect(view.tools.map((tool) => [tool.callId, tool.tool, tool.status])).toEqual([
      ["a", "run_command", "failed"],
      ["b", "grep", "done"],
    ]);
  });

  it("waits for approvals and knows when each was acted on", () => {
    const approvals = [
      {
        id: "ap1",
        callId: "w1",
        tool: "write_file",
        params: { path: "a.txt", content: "hi" },
        description: "Write a.txt",
      },
      {
        id: "ap2",
        callId: "w2",
        tool: "write_file",
        params: { path: "b.txt", content: "yo" },
        description: "Write b.txt",
      },
    ];
    let view = applyEvents(
      emptyTurnView(),
      numbered([
        ["status", { message: "Pass 1", pass: 1 }],
        ["approval", { approvals }],
      ]),
    );
    expect(view.phase).toBe("awaiting_approval");
    expect(pendingApprovals(view).map((item) => item.id)).toEqual(["ap1", "ap2"]);
    view = applyEvents(
      view,
      numbered(
        [
          ["tool_start", { callId: "w1", tool: "write_file", params: {} }],
          ["tool_result", { callId: "w1", tool: "write_file", ok: true, summary: "wrote 2 bytes" }],
          [
            "tool_result",
            { callId: "w2", tool: "write_file", ok: false, summary: "denied by the user" },
          ],
        ],
        3,
      ),
    );
    expect(view.approvals.map((item) => item.state)).toEqual(["approved", "resolved"]);
    expect(view.phase).toBe("running");
  });

  it("tells a denied call from an approved one as the engine reports them (after a reload too)", () => {
    const approvals = ["a.txt", "b.txt"].map((file, index) => ({
      id: `approval-1-${index + 1}`,
      callId: `w${index + 1}`,
      tool: "write_file",
      params: { path: file, content: "hi" },
      description: `Write ${file}`,
    }));
    // The engine announces a declined call like any other: tool_start, then a failed result.
    const view = applyEvents(
      emptyTurnView(),
      numbered([
        ["status", { message: "Pass 1", pass: 1 }],
        ["approval", { approvals }],
        ["tool_start", { callId: "w1", tool: "write_file", params: approvals[0]!.params }],
        ["tool_result", { callId: "w1", tool: "write_file", ok: true, summary: "Wrote a.txt" }],
        ["tool_start", { callId: "w2", tool: "write_file", params: approvals[1]!.params }],
        [
          "tool_result",
          { callId: "w2", tool: "write_file", ok: false, summary: "declined by the user" },
        ],
      ]),
    );
    expect(view.approvals.map((item) => item.state)).toEqual(["approved", "denied"]);
    expect(pendingApprovals(view)).toHaveLength(0);
  });

  it("stops saying it waits for approval once every approval is decided", () => {
    const approval = {
      id: "approval-1-1",
      callId: "slow",
      tool: "run_command",
      params: { command: "npm test" },
      description: "Run `npm test`",
    };
    const waiting = applyEvents(
      emptyTurnView(),
      numbered([
        ["status", { message: "Pass 1", pass: 1 }],
        ["approval", { approvals: [approval] }],
      ]),
    );
    expect(waiting.statusMessage).toBe("Waiting for your approval");
    const running = applyEvent(
      waiting,
      event(3, "tool_start", { callId: "slow", tool: "run_command", params: approval.params }),
    );
    expect(running.phase).toBe("running");
    expect(running.statusMessage).toBeNull();
  });

  it("closes approvals left open when a new pass starts or the turn ends", () => {
    const approval = {
      id: "ap",
      tool: "run_command",
      params: { command: "rm x" },
      description: "Run rm",
    };
    const paused = applyEvents(
      emptyTurnView(),
      numbered([
        ["status", { message: "Pass 1", pass: 1 }],
        ["approval", { approvals: [approval] }],
        ["status", { message: "Still waiting", pass: 1 }],
      ]),
    );
    expect(pendingApprovals(paused)).toHaveLength(1);
    const nextPass = applyEvent(paused, event(4, "status", { message: "Pass 2", pass: 2 }));
    expect(pendingApprovals(nextPass)).toHaveLength(0);
    const cancelled = applyEvent(
      paused,
      event(4, "done", { reason: "cancelled", passes: 1, totalCost: 0 }),
    );
    expect(pendingApprovals(cancelled)).toHaveLength(0);
    expect(cancelled.phase).toBe("finished");
  });

  it("stops tools still running when the turn is cancelled", () => {
    const view = applyEvents(
      emptyTurnView(),
      numbered([
        ["tool_start", { callId: "long", tool: "run_command", params: { command: "sleep 100" } }],
        ["done", { reason: "cancelled", passes: 1, totalCost: 0 }],
      ]),
    );
    expect(view.tools[0]).toMatchObject({ status: "failed", summary: "Stopped: cancelled" });
  });

  it("keeps the changes report, the living document, verification and errors", () => {
    const view = applyEvents(
      emptyTurnView(),
      numbered([
        ["document_update", { sections: { Plan: "1. read\n2. fix" } }],
        [
          "document_update",
          { sections: { Plan: "1. read\n2. fix\n3. test", Findings: "bug in a.ts" } },
        ],
        ["error", { code: "provider_error", message: "The provider answered 500" }],
        [
          "verification",
          { ok: true, commands: [{ command: "npm test", exitCode: 0, output: "" }] },
        ],
        [
          "changes",
          {
            files: [{ path: "a.ts", status: "modified" }],
            diff: "diff --git a/a.ts b/a.ts",
            truncated: false,
          },
        ],
      ]),
    );
    expect(view.document).toEqual({ Plan: "1. read\n2. fix\n3. test", Findings: "bug in a.ts" });
    expect(view.errors).toEqual([
      { code: "provider_error", message: "The provider answered 500", seq: 3 },
    ]);
    expect(view.verification?.ok).toBe(true);
    expect(view.changes?.files).toEqual([{ path: "a.ts", status: "modified" }]);
  });

  it("skips a malformed event without stopping the ones after it", () => {
    const broken = {
      seq: 1,
      type: "tool_start",
      data: null,
      at: new Date(),
    } as unknown as TurnEvent;
    const view = applyEvents(emptyTurnView(), [broken, event(2, "token", { text: "still here" })]);
    expect(view.lastSeq).toBe(2);
    expect(view.draft).toBe("still here");
    expect(view.debug[0]?.message).toMatch(/Step 1/);
  });

  it("times each pass from its status event to the next (the last runs to the end)", () => {
    const start = Date.UTC(2025, 0, 1);
    const view = applyEvents(emptyTurnView(), [
      event(1, "status", { message: "Pass 1", pass: 1 }, start),
      event(2, "status", { message: "Pass 2", pass: 2 }, start + 1500),
      event(3, "done", { reason: "completed", passes: 2, totalCost: 0 }, start + 4000),
    ]);
    expect(passDurations(view, start + 99_999)).toEqual([1500, 2500]);
  });
});
