// Builders for turn events and turns in tests and benches: numbered, timed, typed by protocol.
import type { ChatTurn, TurnEvent, TurnEventData, TurnEventType } from "@gadget/protocol";
import { emptyTurnStats } from "@gadget/protocol";

/** One event with `seq`, at `baseTime + seq` ms unless `at` is given. */
export function event<T extends TurnEventType>(
  seq: number,
  type: T,
  data: TurnEventData<T>,
  at: number = Date.UTC(2025, 0, 1) + seq * 10,
): TurnEvent {
  return { seq, type, data, at: new Date(at) } as TurnEvent;
}

/** Numbers a list of `[type, data]` pairs from `firstSeq`. */
export function numbered(
  pairs: { [T in TurnEventType]: [T, TurnEventData<T>] }[TurnEventType][],
  firstSeq = 1,
): TurnEvent[] {
  return pairs.map(([type, data], index) => event(firstSeq + index, type, data as never));
}

/**
 * A long realistic turn: passes of status, thinking, tool_start, tool_output, tool_result and
 * cost_update, until `count` events. Used by the 5,000-event tests and the bench.
 */
export function longTurn(count: number): TurnEvent[] {
  const events: TurnEvent[] = [];
  let seq = 0;
  let pass = 0;
  let call = 0;
  let cost = 0;
  const push = <T extends TurnEventType>(type: T, data: TurnEventData<T>) => {
    if (seq < count) events.push(event(++seq, type, data));
  };
  push("queued", {});
  push("dispatched", { droneId: "drone-1", droneName: "laptop" });
  while (seq < count) {
    pass += 1;
    push("status", { message: `Pass ${pass}: analysing`, pass, model: "model-a" });
    push("thinking", { text: `Looking at step ${pass}. ` });
    for (let index = 0; index < 3 && seq < count; index += 1) {
      call += 1;
      const callId = `call-${call}`;
      push("tool_start", {
        callId,
        tool: "run_command",
        params: { command: `npm test -- ${call}` },
      });
      push("tool_output", { callId, stream: "stdout", text: `line one of ${call}\n` });
      push("tool_output", { callId, stream: "stdout", text: `line two of ${call}\n` });
      push("tool_result", {
        callId,
        tool: "run_command",
        ok: call % 7 !== 0,
        summary: `exit ${call % 7 === 0 ? 1 : 0}`,
      });
    }
    cost += 0.001;
    push("cost_update", {
      totalCost: cost,
      tokens: { input: pass * 1000, output: pass * 100, reasoning: 0, cached: 0 },
    });
  }
  return events;
}

/** A ChatTurn record as the server returns it. */
export function turnRecord(overrides: Partial<ChatTurn> = {}): ChatTurn {
  return {
    _id: "64b000000000000000000001",
    session: "64b000000000000000000002",
    user: "64b000000000000000000003",
    drone: null,
    provider: "64b000000000000000000004",
    llm: "model-a",
    mode: "agent",
    prompt: "Fix the failing test",
    status: "processing",
    response: null,
    error: null,
    exitReason: null,
    stats: emptyTurnStats(),
    changes: [],
    createdAt: new Date(Date.UTC(2025, 0, 1)),
    startedAt: new Date(Date.UTC(2025, 0, 1)),
    finishedAt: null,
    ...overrides,
  };
}
