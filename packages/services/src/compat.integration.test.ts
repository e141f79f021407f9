// Proves the MongoDB-compatible server and Redis from the harness support what the app relies on.
// See docs/mongodb-compatibility.md for what the code must not use.
import { randomUUID } from "node:crypto";
import { Queue, QueueEvents, Worker } from "bullmq";
import mongoose, { Schema } from "mongoose";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { databaseUrl } from "./services.ts";
import { pingMongo, pingRedis } from "./wire.ts";

describe("service harness", () => {
  it("gives a MONGO_URL that answers the MongoDB wire protocol and a REDIS_URL that answers PING", async () => {
    await expect(pingMongo(inject("mongoUrl"))).resolves.toBeUndefined();
    await expect(pingRedis(inject("redisUrl"))).resolves.toBeUndefined();
  });

  it("rejects a port where nothing listens", async () => {
    await expect(pingRedis("redis://127.0.0.1:1", 500)).rejects.toThrow();
  });
});

describe("mongoose on the harness", () => {
  const connection = mongoose.createConnection();
  const itemSchema = new Schema({
    name: { type: String, required: true, unique: true },
    count: { type: Number, default: 0 },
    tags: { type: [String], default: [] },
    owner: String,
  });
  const Item = connection.model("Item", itemSchema);

  beforeAll(async () => {
    await connection.openUri(databaseUrl(inject("mongoUrl"), `compat_${randomUUID().slice(0, 8)}`));
    await Item.init();
  });
  afterAll(async () => {
    await connection.dropDatabase();
    await connection.close();
  });

  it("creates and finds with sort and limit", async () => {
    await Item.create([
      { name: "b", count: 2, owner: "x" },
      { name: "a", count: 1, owner: "x" },
      { name: "c", count: 3, owner: "y" },
    ]);
    const found = await Item.find({ owner: "x" }).sort({ count: -1 }).limit(1).lean();
    expect(found.map((item) => item.name)).toEqual(["b"]);
  });

  it("updates with $set, $inc and $push, via updateOne and findOneAndUpdate", async () => {
    await Item.updateOne(
      { name: "a" },
      { $set: { owner: "z" }, $inc: { count: 5 }, $push: { tags: "one" } },
    );
    const updated = await Item.findOneAndUpdate(
      { name: "a" },
      { $inc: { count: 1 }, $push: { tags: "two" } },
      { returnDocument: "after" },
    ).lean();
    expect(updated).toMatchObject({ owner: "z", count: 7, tags: ["one", "two"] });
  });

  it("adds to a set once with $addToSet, and deletes many by $in", async () => {
    await Item.create([{ name: "set" }, { name: "gone-1" }, { name: "gone-2" }]);
    await Item.updateOne({ name: "set" }, { $addToSet: { tags: "npm test" } });
    await Item.updateOne({ name: "set" }, { $addToSet: { tags: "npm test" } });
    expect((await Item.findOne({ name: "set" }).lean())?.tags).toEqual(["npm test"]);
    const { deletedCount } = await Item.deleteMany({ name: { $in: ["gone-1", "gone-2", "none"] } });
    expect(deletedCount).toBe(2);
    expect(await Item.countDocuments({ name: { $in: ["gone-1", "gone-2"] } })).toBe(0);
    await Item.deleteOne({ name: "set" });
  });

  it("rejects a duplicate on a unique index", async () => {
    await expect(Item.create({ name: "c" })).rejects.toMatchObject({ code: 11000 });
  });

  it("counts documents", async () => {
    expect(await Item.countDocuments({ owner: { $in: ["x", "y"] } })).toBe(2);
  });

  it("finds, updates and deletes by _id through the _id index, not a scan (tools/ferretdb/patches)", async () => {
    const [first] = await Item.create([{ name: "indexed" }]);
    const items = connection.collection("items");
    const explained = await items.find({ _id: first!._id }).explain();
    // FerretDB answers with SQLite's query plan; a real MongoDB with its own (IDHACK or EXPRESS).
    const plan = JSON.stringify(explained.queryPlanner);
    if ("Plan" in explained.queryPlanner) expect(plan).toMatch(/USING INDEX \S+__id_/);
    else expect(plan).not.toMatch(/COLLSCAN/);
    await Item.updateOne({ _id: first!._id }, { $inc: { count: 1 } });
    expect((await Item.findById(first!._id).lean())?.count).toBe(1);
    await Item.deleteOne({ _id: first!._id });
    expect(await Item.findById(first!._id).lean()).toBeNull();
  });

  it("runs a bulkWrite of inserts, updates and deletes", async () => {
    const result = await Item.bulkWrite([
      { insertOne: { document: { name: "d", count: 4 } } },
      { updateOne: { filter: { name: "b" }, update: { $inc: { count: 10 } } } },
      { deleteOne: { filter: { name: "c" } } },
    ]);
    expect(result.insertedCount).toBe(1);
    expect(result.modifiedCount).toBe(1);
    expect(result.deletedCount).toBe(1);
    const names = (await Item.find().sort({ name: 1 }).lean()).map(
      (item) => `${item.name}:${item.count}`,
    );
    expect(names).toEqual(["a:7", "b:12", "d:4"]);
  });

  it("keeps binary data of 2 MiB byte for byte in one document (a prompt's image, decision 0051)", async () => {
    const Blob = connection.model("Blob", new Schema({ bytes: Buffer }));
    const bytes = Buffer.alloc(2 * 1024 * 1024);
    for (let index = 0; index < bytes.length; index += 1) bytes[index] = (index * 31) % 256;
    const [stored] = await Blob.insertMany([{ bytes }]);
    const read = await Blob.findById(stored?._id).lean();
    // A lean read gives BSON Binary: its `buffer` holds the bytes.
    const value = read?.bytes as unknown as { buffer: Uint8Array };
    expect(Buffer.from(value.buffer).equals(bytes)).toBe(true);
  });
});

describe("filters on indexed fields", () => {
  // FerretDB's SQLite backend pushes these down to the index (tools/ferretdb/patches/…/sqlite/
  // collection.go); what comes back must still be exactly what MongoDB matches.
  const connection = mongoose.createConnection();
  const Event = connection.model(
    "Event",
    new Schema({ turn: Schema.Types.ObjectId, seq: Schema.Types.Mixed, status: String }).index({
      turn: 1,
      seq: 1,
    }),
  );
  const [first, second, third, long] = [
    new mongoose.Types.ObjectId(),
    new mongoose.Types.ObjectId(),
    new mongoose.Types.ObjectId(),
    new mongoose.Types.ObjectId(),
  ];

  beforeAll(async () => {
    await connection.openUri(databaseUrl(inject("mongoUrl"), `compat_${randomUUID().slice(0, 8)}`));
    await Event.init();
    await connection.collection("events").createIndex({ status: 1 });
    await connection.collection("events").insertMany([
      ...Array.from({ length: 30 }, (_, index) => ({
        turn: [first, second, third][index % 3],
        seq: Math.floor(index / 3) + 1,
        status: index % 2 ? "running" : 'quote " and <tag>',
      })),
      // Values a numeric comparison must pass over as MongoDB does: a string, null, missing,
      // a double equal to an integer.
      { turn: first, seq: "7", status: "odd" },
      { turn: first, seq: null, status: "odd" },
      { turn: first, status: "odd" },
      { turn: second, seq: 4.5, status: "odd" },
      { turn: second, seq: 11.0, status: "odd" },
      // A longer turn, where ranges are searched by the numbers' JSON text: every numeric type,
      // fractions, and values that sort between the bounds as text but not as numbers.
      ...Array.from({ length: 120 }, (_, index) => ({ turn: long, seq: index + 1 })),
      { turn: long, seq: new mongoose.mongo.Double(20) },
      { turn: long, seq: mongoose.mongo.Long.fromNumber(21) },
      { turn: long, seq: 15.5 },
      { turn: long, seq: 99.5 },
      { turn: long, seq: 0.5 },
      { turn: long, seq: -20 },
      { turn: long, seq: "20" },
    ]);
  });
  afterAll(async () => {
    await connection.dropDatabase();
    await connection.close();
  });

  const seqs = async (filter: Record<string, unknown>) =>
    (await Event.find(filter).sort({ seq: 1 }).lean()).map((event) => event.seq);

  it("finds by equality and integer ranges as MongoDB does", async () => {
    expect(await seqs({ turn: first, seq: { $gt: 7 } })).toEqual([8, 9, 10]);
    expect(await seqs({ turn: second, seq: { $gte: 4, $lt: 6 } })).toEqual([4, 4.5, 5]);
    expect(await seqs({ turn: second, seq: { $lte: 2 } })).toEqual([1, 2]);
    expect(await seqs({ turn: second, seq: 11 })).toEqual([11]);
    expect(await seqs({ turn: { $eq: third }, seq: { $gt: 9 } })).toEqual([10]);
    expect(await Event.countDocuments({ turn: first, seq: null })).toBe(2);
    expect(await seqs({ turn: { $in: [first, third] }, seq: 3 })).toEqual([3, 3]);
  });

  it("finds ranges and equality in a long turn as MongoDB does, whatever the numbers' type", async () => {
    const range = (from: number, to: number) =>
      Array.from({ length: to - from + 1 }, (_, index) => from + index);
    const numbers = async (filter: Record<string, unknown>) =>
      (await seqs({ turn: long, ...filter })).map(Number);
    expect(await numbers({ seq: { $gt: 12, $lte: 34 } })).toEqual(
      [...range(13, 34), 15.5, 20, 21].sort((a, b) => a - b),
    );
    expect(await numbers({ seq: { $gte: 90, $lt: 100 } })).toEqual([...range(90, 99), 99.5]);
    expect(await numbers({ seq: { $gt: 2, $lt: 4 } })).toEqual([3]);
    // Bounds of different lengths: compared as numbers only.
    expect(await numbers({ seq: { $gt: 95, $lte: 105 } })).toEqual([
      ...range(96, 99),
      99.5,
      ...range(100, 105),
    ]);
    expect(await numbers({ seq: { $gt: 0, $lt: 2 } })).toEqual([0.5, 1]);
    expect(await numbers({ seq: 20 })).toEqual([20, 20]);
    expect(await numbers({ seq: { $eq: 21 } })).toEqual([21, 21]);
    expect(await numbers({ seq: -20 })).toEqual([-20]);
  });

  it("finds strings by equality and $in, escapes included", async () => {
    expect(await Event.countDocuments({ status: "running" })).toBe(15);
    expect(await Event.countDocuments({ status: 'quote " and <tag>' })).toBe(15);
    expect(await Event.countDocuments({ status: { $in: ["odd", "running"] } })).toBe(20);
    expect(await Event.countDocuments({ turn: first, status: { $ne: "odd" } })).toBe(10);
  });

  it("searches the index instead of scanning the collection", async () => {
    const explained = await connection
      .collection("events")
      .find({ turn: first, seq: { $gt: 3 } })
      .explain();
    const plan = JSON.stringify(explained.queryPlanner);
    if ("Plan" in explained.queryPlanner) expect(plan).toMatch(/USING INDEX \S+_turn_1_seq_1/);
    else expect(plan).not.toMatch(/COLLSCAN/);
  });

  it("searches a bounded range of a turn in the index, not the turn's every event", async () => {
    const explained = await connection
      .collection("events")
      .find({ turn: long, seq: { $gt: 40, $lte: 60 } })
      .explain();
    const plan = JSON.stringify(explained.queryPlanner);
    // SQLite names both columns of the index it searches: the turn, then the seq between bounds.
    if ("Plan" in explained.queryPlanner)
      expect(plan).toMatch(/USING INDEX \S+_turn_1_seq_1 \(\S+=\? AND \S+>\? AND \S+<\?\)/);
    else expect(plan).toMatch(/IXSCAN/);
  });
});

describe("BullMQ on the harness Redis", () => {
  it("round-trips a job from a queue to a worker and back", async () => {
    const url = new URL(inject("redisUrl"));
    const connection = { host: url.hostname, port: Number(url.port) };
    const prefix = `compat-${randomUUID().slice(0, 8)}`;
    const queue = new Queue("orders", { connection, prefix });
    const events = new QueueEvents("orders", { connection, prefix });
    const worker = new Worker(
      "orders",
      async (job) => ({ doubled: (job.data as { n: number }).n * 2 }),
      {
        connection,
        prefix,
      },
    );
    try {
      await events.waitUntilReady();
      const job = await queue.add("double", { n: 21 }, { jobId: "turn-1" });
      // A second add with the same job id is a no-op: no double dispatch.
      const again = await queue.add("double", { n: 99 }, { jobId: "turn-1" });
      expect(again.id).toBe(job.id);
      await expect(job.waitUntilFinished(events, 10_000)).resolves.toEqual({ doubled: 42 });
    } finally {
      await worker.close();
      await events.close();
      await queue.obliterate({ force: true });
      await queue.close();
    }
  });
});
