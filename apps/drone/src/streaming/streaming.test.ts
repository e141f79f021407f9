import { existsSync } from "node:fs";
import { appendFile, readFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { agentEvent } from "@gadget/protocol";
import { makeTempDir } from "@gadget/testkit";
import { Server } from "socket.io";
import { io as connect } from "socket.io-client";
import { afterEach, describe, expect, it } from "vitest";
import { EventJournal, TurnJournal } from "./journal.ts";
import { LeftoverSenders } from "./leftovers.ts";
import { type DroneSocket, EventSender } from "./sender.ts";

const turnId = "65f1a2b3c4d5e6f7a8b9c0d1";

async function journalDir() {
  return makeTempDir("gadget-journal-");
}

describe("TurnJournal", () => {
  it("numbers events from the first seq and keeps them until acknowledged", async () => {
    const journal = await new EventJournal(await journalDir()).open(turnId, 3);
    journal.append(agentEvent("token", { text: "a" }));
    journal.append(agentEvent("token", { text: "b" }));
    journal.append(agentEvent("token", { text: "c" }));
    expect(journal.pending().map((event) => event.seq)).toEqual([3, 4, 5]);
    journal.acknowledge(4);
    expect(journal.pending().map((event) => event.seq)).toEqual([5]);
  });

  it("survives a restart: unacknowledged events and numbering come back from disk", async () => {
    const directory = await journalDir();
    const first = await new EventJournal(directory).open(turnId, 1);
    for (const text of ["a", "b", "c", "d"]) first.append(agentEvent("token", { text }));
    first.acknowledge(2);
    first.recordCheckpoint({ messages: ["m1"] });
    await first.flushed();
    // A crash mid-write leaves a torn last line; it must not break loading.
    await appendFile(path.join(directory, `${turnId}.jsonl`), '{"event":{"seq":5,');

    const [reloaded] = await new EventJournal(directory).leftovers();
    expect(reloaded?.turnId).toBe(turnId);
    expect(reloaded?.pending().map((event) => [event.seq, event.data])).toEqual([
      [3, { text: "c" }],
      [4, { text: "d" }],
    ]);
    expect(reloaded?.upcomingSeq).toBe(5);
    expect(reloaded?.checkpoint).toEqual({ messages: ["m1"] });
  });

  it("compacts acknowledged events so the file stays small", async () => {
    const directory = await journalDir();
    const journal = await new EventJournal(directory).open(turnId, 1);
    for (let index = 0; index < 5000; index++)
      journal.append(agentEvent("token", { text: `t${index}` }));
    journal.acknowledge(4999);
    await journal.flushed();
    const lines = (await readFile(path.join(directory, `${turnId}.jsonl`), "utf8"))
      .trim()
      .split("\n");
    expect(lines.length).toBeLessThan(10);
    const reloaded = await TurnJournal.load(turnId, path.join(directory, `${turnId}.jsonl`));
    expect(reloaded.pending().map((event) => event.seq)).toEqual([5000]);
  });
});

describe("LeftoverSenders", () => {
  it("names a turn cut by a restart instead of sending it, and lets its journal go once settled", async () => {
    const directory = await journalDir();
    const cut = await new EventJournal(directory).open(turnId, 1);
    cut.append(agentEvent("token", { text: "journaled, never sent" }));
    const endedId = "65f1a2b3c4d5e6f7a8b9c0d3";
    const ended = await new EventJournal(directory).open(endedId, 1);
    ended.append(agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }));
    await Promise.all([cut.flushed(), ended.flushed()]);

    // Never connected: what is sent stays pending, and the test sees what was started.
    const socket: DroneSocket = connect("http://127.0.0.1:9", { autoConnect: false });
    const leftovers = new LeftoverSenders(socket, { canSend: () => false });
    await leftovers.load(new EventJournal(directory), () => false);
    expect(await leftovers.cutTurns()).toEqual([turnId]);
    expect(leftovers.size).toBe(1); // the ended turn's `done` is sent again; the cut one is not
    leftovers.settleCut();
    expect(existsSync(path.join(directory, `${turnId}.jsonl`))).toBe(false);
    expect(existsSync(path.join(directory, `${endedId}.jsonl`))).toBe(true);
    expect(await leftovers.cutTurns()).toEqual([]);
  });
});

describe("EventSender over a real Socket.IO connection", () => {
  let close: () => Promise<void> = async () => {};
  afterEach(async () => close());

  /** A server that stores events idempotently by seq, like the real one, and can drop connections. */
  async function startServer(options: { dropAfterBatches?: number } = {}) {
    const http = createServer();
    const server = new Server(http);
    const stored = new Map<number, unknown>();
    let batches = 0;
    server.on("connection", (socket) => {
      socket.on("turn_events", (batch: { events: Array<{ seq: number; data: unknown }> }, ack) => {
        batches++;
        if (options.dropAfterBatches !== undefined && batches === options.dropAfterBatches) {
          // Store but lose the ack, as when a connection breaks right after the write.
          for (const event of batch.events) stored.set(event.seq, event.data);
          socket.conn.close();
          return;
        }
        for (const event of batch.events) stored.set(event.seq, event.data);
        ack({ ok: true, lastSeq: Math.max(...batch.events.map((event) => event.seq)) });
      });
    });
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
    close = async () => {
      await server.close();
    };
    return { url, stored, batches: () => batches };
  }

  it("delivers every event once, in order, and empties the journal", async () => {
    const server = await startServer();
    const socket: DroneSocket = connect(server.url, { transports: ["websocket"] });
    const journal = await new EventJournal(await journalDir()).open(turnId, 1);
    const sender = new EventSender(socket, journal, { batchSize: 50 });
    socket.on("connect", () => sender.notify());
    for (let index = 0; index < 500; index++) {
      journal.append(agentEvent("token", { text: String(index) }));
      if (index % 7 === 0) sender.notify();
    }
    sender.notify();
    await sender.drained();
    expect([...server.stored.keys()]).toEqual(Array.from({ length: 500 }, (_, index) => index + 1));
    expect(journal.pending()).toEqual([]);
    socket.close();
  });

  it("re-sends what was not acknowledged after the connection drops", async () => {
    const server = await startServer({ dropAfterBatches: 2 });
    const socket: DroneSocket = connect(server.url, {
      transports: ["websocket"],
      reconnectionDelay: 50,
      reconnectionDelayMax: 100,
    });
    const journal = await new EventJournal(await journalDir()).open(turnId, 1);
    const sender = new EventSender(socket, journal, { batchSize: 10, ackTimeoutMs: 2000 });
    socket.on("connect", () => sender.notify());
    for (let index = 0; index < 100; index++)
      journal.append(agentEvent("token", { text: String(index) }));
    sender.notify();
    await sender.drained();
    expect(server.stored.size).toBe(100);
    expect([...server.stored.keys()].sort((a, b) => a - b)).toEqual(
      Array.from({ length: 100 }, (_, index) => index + 1),
    );
    // The dropped batch was sent again after reconnecting.
    expect(server.batches()).toBeGreaterThan(10);
    socket.close();
  });

  it("stops and reports when the server refuses the turn", async () => {
    const http = createServer();
    const server = new Server(http);
    server.on("connection", (socket) => {
      socket.on("turn_events", (_batch, ack) =>
        ack({ ok: false, error: { code: "conflict", message: "turn belongs to another drone" } }),
      );
    });
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    close = async () => {
      await server.close();
    };
    const socket: DroneSocket = connect(
      `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
      {
        transports: ["websocket"],
      },
    );
    const journal = await new EventJournal(await journalDir()).open(turnId, 1);
    const refusals: string[] = [];
    const sender = new EventSender(socket, journal, {
      onRejected: (error) => refusals.push(error.message),
    });
    socket.on("connect", () => sender.notify());
    journal.append(agentEvent("token", { text: "x" }));
    sender.notify();
    await sender.drained();
    expect(refusals).toEqual(["turn belongs to another drone"]);
    expect(sender.isRejected).toBe(true);
    socket.close();
  });
});
