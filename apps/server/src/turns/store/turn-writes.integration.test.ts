// ChatTurn updates group-committed: a burst lands whole, and one failing update fails alone.
import { Types } from "mongoose";
import { describe, expect, it } from "vitest";
import { useTestServer } from "../../testing/use-test-server.ts";
import { TurnWrites } from "./turn-writes.ts";

const fixture = useTestServer();

describe("turn writes", () => {
  it("stores a burst of 150 turns' updates, each caller answered once its own is stored", async () => {
    const { models } = fixture.server.context;
    const ids = Array.from({ length: 150 }, () => new Types.ObjectId());
    await models.ChatTurn.collection.insertMany(
      ids.map((_id) => ({ _id, status: "dispatched", lastSeq: 1 })),
    );
    const writes = new TurnWrites(models);
    // Issued together: the first goes out alone, the rest gather behind it (over 100 statements
    // in one command, which hung the unpatched FerretDB, see tools/ferretdb/patches).
    await Promise.all(
      ids.map((id, index) => writes.set(id, { status: "processing", lastSeq: index + 2 })),
    );
    const stored = await models.ChatTurn.find({ _id: { $in: ids } })
      .select({ status: 1, lastSeq: 1 })
      .lean();
    expect(stored).toHaveLength(150);
    for (const turn of stored) {
      expect(turn.status).toBe("processing");
      expect(turn.lastSeq).toBe(ids.findIndex((id) => id.equals(turn._id)) + 2);
    }
  });

  it("rejects only the update the database refused; the others in its group are stored", async () => {
    const { models } = fixture.server.context;
    const ids = Array.from({ length: 3 }, () => new Types.ObjectId());
    await models.ChatTurn.collection.insertMany(ids.map((_id) => ({ _id, lastSeq: 1, tags: 1 })));
    const writes = new TurnWrites(models);
    const held = writes.set(ids[0]!, { lastSeq: 2 });
    const [bad, good] = [
      // `$set` below a number: the server refuses this one statement.
      writes.set(ids[1]!, { "lastSeq.deeper": 3 }),
      writes.set(ids[2]!, { lastSeq: 4 }),
    ];
    await held;
    await expect(bad).rejects.toThrow(/lastSeq/);
    await expect(good).resolves.toBeUndefined();
    const stored = await models.ChatTurn.find({ _id: { $in: ids } })
      .select({ lastSeq: 1 })
      .lean();
    expect(Object.fromEntries(stored.map((turn) => [String(turn._id), turn.lastSeq]))).toEqual({
      [String(ids[0])]: 2,
      [String(ids[1])]: 1,
      [String(ids[2])]: 4,
    });
  });
});
