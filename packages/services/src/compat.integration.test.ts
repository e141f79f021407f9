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
