// A checkpoint reaches the server only after the events journaled before it are stored, over a
// real Socket.IO connection: a resume from it never loses one of them (decision 0046).
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { agentEvent } from "@gadget/protocol";
import { makeTempDir } from "@gadget/testkit";
import { Server } from "socket.io";
import { io as connect } from "socket.io-client";
import { afterEach, describe, expect, it } from "vitest";
import { EventJournal } from "../streaming/journal.ts";
import { type DroneSocket, EventSender } from "../streaming/sender.ts";
import { TurnCheckpoints } from "./checkpoint.ts";

const turnId = "65f1a2b3c4d5e6f7a8b9c0d2";
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

describe("TurnCheckpoints", () => {
  let close: () => Promise<void> = async () => {};
  afterEach(async () => close());

  it("sends a checkpoint only once the events before it are stored", async () => {
    const http = createServer();
    const server = new Server(http);
    const stored = new Set<number>();
    /** The seqs stored when each checkpoint arrived. */
    const storedAtCheckpoint: number[][] = [];
    server.on("connection", (socket) => {
      socket.on("turn_events", (batch: { events: Array<{ seq: number }> }, ack) => {
        // A slow database: the batch is stored (and acknowledged) a moment later.
        setTimeout(() => {
          for (const event of batch.events) stored.add(event.seq);
          ack({ ok: true, lastSeq: Math.max(...batch.events.map((event) => event.seq)) });
        }, 300);
      });
      socket.on("turn_checkpoint", (_checkpoint, ack) => {
        storedAtCheckpoint.push([...stored].sort((a, b) => a - b));
        ack({ ok: true });
      });
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
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    const journal = await new EventJournal(await makeTempDir("gadget-journal-")).open(turnId, 1);
    const sender = new EventSender(socket, journal);
    const checkpoints = new TurnCheckpoints(turnId, journal, socket, sender, quiet);

    for (const text of ["a", "b", "c"]) journal.append(agentEvent("token", { text }));
    sender.notify();
    checkpoints.record({ messages: [] } as never);
    journal.append(agentEvent("token", { text: "after the checkpoint" }));
    sender.notify();
    await checkpoints.settled();
    await sender.drained();

    expect(storedAtCheckpoint).toHaveLength(1);
    expect(storedAtCheckpoint[0]).toEqual(expect.arrayContaining([1, 2, 3]));
    socket.close();
  });

  it("waits for the events' new numbers after the journal is renumbered", async () => {
    const journal = await new EventJournal(await makeTempDir("gadget-journal-")).open(turnId, 1);
    // Never connected: nothing is acknowledged unless the test says so.
    const socket: DroneSocket = connect("http://127.0.0.1:9", { autoConnect: false });
    const sender = new EventSender(socket, journal, { canSend: () => false });
    for (const text of ["a", "b", "c", "d"]) journal.append(agentEvent("token", { text }));
    let storedUpToFour = false;
    void sender.stored(4).then(() => {
      storedUpToFour = true;
    });
    // The server stored 1–2 and numbered two events of its own (3, 4): "c" and "d" are now 5, 6.
    journal.rebase(2, 5);
    sender.renumbered(2, 5);
    const settle = async (seq: number) => {
      journal.acknowledge(seq);
      sender.renumbered(seq, seq + 1); // no shift: settles what is stored now
      await new Promise((resolve) => setImmediate(resolve));
    };
    await settle(5);
    expect(storedUpToFour).toBe(false); // "d", now 6, is not stored yet
    await settle(6);
    expect(storedUpToFour).toBe(true);
    await journal.flushed();
  });
});
