// The models on the harness's MongoDB-compatible server: indexes, idempotent event writes,
// single-use registration tokens and the conditional updates the server relies on.
import { randomUUID } from "node:crypto";
import { databaseUrl } from "@gadget/services";
import { Types } from "mongoose";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type Database, isDuplicateKeyError, openDatabase } from "./index.ts";

let database: Database;

beforeAll(async () => {
  database = await openDatabase(databaseUrl(inject("mongoUrl"), `db_${randomUUID().slice(0, 8)}`));
});
afterAll(async () => {
  await database.connection.dropDatabase();
  await database.close();
});

describe("openDatabase", () => {
  it("creates the unique index that makes event ingestion idempotent", async () => {
    const { TurnEvent } = database.models;
    const turn = new Types.ObjectId();
    const at = new Date();
    await TurnEvent.insertMany([
      { turn, seq: 1, type: "queued", data: {}, at },
      { turn, seq: 2, type: "dispatched", data: { droneId: "x" }, at },
    ]);
    const error = await TurnEvent.insertMany(
      [
        { turn, seq: 2, type: "dispatched", data: { droneId: "x" }, at },
        { turn, seq: 3, type: "token", data: { text: "hi" }, at },
      ],
      { ordered: false },
    ).catch((caught: unknown) => caught);
    expect(isDuplicateKeyError(error)).toBe(true);
    const seqs = (await TurnEvent.find({ turn }).sort({ seq: 1 }).lean()).map((event) => event.seq);
    expect(seqs).toEqual([1, 2, 3]);
  });

  it("is safe to open twice on the same database (indexes already there)", async () => {
    const again = await openDatabase(databaseUrl(inject("mongoUrl"), database.connection.name));
    await again.close();
  });

  it("rejects a second user with the same email", async () => {
    const { User } = database.models;
    await User.create({ email: "a@example.com", name: "A", passwordHash: "x" });
    await expect(
      User.create({ email: "a@example.com", name: "B", passwordHash: "y" }),
    ).rejects.toMatchObject({ code: 11000 });
  });

  it("consumes a registration token once and only before it expires", async () => {
    const { RegistrationToken } = database.models;
    const user = new Types.ObjectId();
    await RegistrationToken.create({
      _id: "live",
      user,
      tokenHash: "live",
      expiresAt: new Date(Date.now() + 60_000),
    });
    await RegistrationToken.create({
      _id: "old",
      user,
      tokenHash: "old",
      expiresAt: new Date(Date.now() - 1),
    });
    const consume = (tokenHash: string) =>
      RegistrationToken.findOneAndUpdate(
        { tokenHash, usedAt: null, expiresAt: { $gt: new Date() } },
        { $set: { usedAt: new Date() } },
        { returnDocument: "after" },
      ).lean();
    expect(await consume("live")).toMatchObject({ tokenHash: "live" });
    expect(await consume("live")).toBeNull();
    expect(await consume("old")).toBeNull();
  });

  // FerretDB v1 runs updates as read-modify-write without isolation, so the server serialises
  // writes to one turn with a Redis lock; sequentially, the conditional update holds.
  it("flips a turn's status only while the condition holds", async () => {
    const { ChatTurn } = database.models;
    const turn = await ChatTurn.create({
      user: new Types.ObjectId(),
      session: new Types.ObjectId(),
      project: new Types.ObjectId(),
      provider: new Types.ObjectId(),
      llm: "model",
      mode: "agent",
      prompt: "hello",
      status: "processing",
      leaseExpiresAt: new Date(Date.now() - 1000),
    });
    const flip = () =>
      ChatTurn.updateOne(
        { _id: turn._id, status: { $in: ["processing"] }, leaseExpiresAt: { $lt: new Date() } },
        {
          $set: { status: "interrupted" },
          $max: { lastSeq: 4 },
          $inc: { "stats.toolCallCount": 2 },
        },
      );
    expect((await flip()).modifiedCount).toBe(1);
    expect((await flip()).modifiedCount).toBe(0);
    const stored = await ChatTurn.findById(turn._id).lean();
    expect(stored).toMatchObject({
      status: "interrupted",
      lastSeq: 4,
      stats: { toolCallCount: 2, durationLabel: "pending" },
    });
  });
});
