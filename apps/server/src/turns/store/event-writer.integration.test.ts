// Turn events group-committed: light traffic is written at once, a stream of batches in fewer,
// larger writes, and every caller is answered once its own events are stored.
import { agentEvent, type TurnEvent } from "@gadget/protocol";
import { Types } from "mongoose";
import { describe, expect, it } from "vitest";
import { useTestServer } from "../../testing/use-test-server.ts";
import { EventWriter } from "./event-writer.ts";

const fixture = useTestServer();

function batch(from: number, count: number): TurnEvent[] {
  return Array.from(
    { length: count },
    (_, index) =>
      ({
        ...agentEvent("token", { text: `t${from + index}` }),
        seq: from + index,
        at: new Date(),
      }) as TurnEvent,
  );
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("event writer", () => {
  it("writes a lone batch at once", async () => {
    const writer = new EventWriter(fixture.server.context.models, fixture.server.context.health);
    const turnId = String(new Types.ObjectId());
    const written = writer.write(turnId, batch(1, 3));
    // Started before write() returned: nothing waits to gather.
    expect(writer.stats).toEqual({ writes: 1, events: 3 });
    await written;
    const stored = await fixture.server.context.models.TurnEvent.countDocuments({
      turn: new Types.ObjectId(turnId),
    });
    expect(stored).toBe(3);
  });

  it("gathers a stream of batches into fewer writes, each caller answered once stored", async () => {
    const { models } = fixture.server.context;
    const writer = new EventWriter(models, fixture.server.context.health, { gatherMs: 20 });
    const turnIds = Array.from({ length: 5 }, () => String(new Types.ObjectId()));
    const answered: Array<Promise<number | null>> = [];
    const started = performance.now();
    // 150 batches, one a millisecond or so: far faster than one write per 20 ms.
    for (let index = 0; index < 150; index++) {
      const turnId = turnIds[index % 5]!;
      const from = Math.floor(index / 5) * 2 + 1;
      const written = writer.write(turnId, batch(from, 2));
      // Some callers look for their own events as soon as they are answered.
      answered.push(
        written.then(() =>
          index % 30 === 0
            ? models.TurnEvent.countDocuments({ turn: new Types.ObjectId(turnId), seq: from })
            : null,
        ),
      );
      await sleep(1);
    }
    const found = await Promise.all(answered);
    const elapsed = performance.now() - started;
    expect(found.filter((count) => count !== null)).toEqual([1, 1, 1, 1, 1]);
    expect(writer.stats.events).toBe(300);
    // Eight writes tell it is under load; from then on one per 20 ms at most (one per batch, or
    // one per insert's round trip, without the gathering).
    expect(writer.stats.writes).toBeLessThanOrEqual(9 + Math.ceil(elapsed / 20));
    const stored = await models.TurnEvent.countDocuments({
      turn: { $in: turnIds.map((id) => new Types.ObjectId(id)) },
    });
    expect(stored).toBe(300);
  });

  it("fails only the batch the database cannot take; the others of its write are stored", async () => {
    const { models, health } = fixture.server.context;
    const writer = new EventWriter(models, health, { gatherMs: 50 });
    const good = [String(new Types.ObjectId()), String(new Types.ObjectId())];
    const bad = String(new Types.ObjectId());
    // Under load the writer gathers: these three go out as one group.
    for (let index = 0; index < 9; index++) await writer.write(good[0]!, batch(100 + index, 1));
    const hostile = {
      ...agentEvent("debug", { message: "x", details: { "key\u0000with-nul": 1 } }),
      seq: 1,
      at: new Date(),
    } as TurnEvent;
    const outcomes = await Promise.allSettled([
      writer.write(good[0]!, batch(1, 2)),
      writer.write(bad, [hostile]),
      writer.write(good[1]!, batch(1, 2)),
    ]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual([
      "fulfilled",
      "rejected",
      "fulfilled",
    ]);
    for (const turnId of good) {
      expect(
        await models.TurnEvent.countDocuments({
          turn: new Types.ObjectId(turnId),
          seq: { $lte: 2 },
        }),
      ).toBe(2);
    }
  });
});
