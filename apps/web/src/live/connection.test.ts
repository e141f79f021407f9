// @vitest-environment node
// The /ide connection against a real Socket.IO server speaking the contract of socket.ts:
// replay after a seq, re-subscribe after a drop with the last applied seq, refuse a bad token,
// and a TurnStore that applies each relayed batch once.
import { createServer, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { IdeClientToServerEvents, IdeServerToClientEvents, TurnEvent } from "@gadget/protocol";
import { Server } from "socket.io";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ApiClient } from "../api/client.ts";
import { event, turnRecord } from "../test/events.ts";
import { type ConnectionState, IdeConnection } from "./connection.ts";
import { TurnStore } from "./turn-store.ts";
import { applyEvents, emptyTurnView } from "./turn-view.ts";

const turnId = "64b0000000000000000000aa";
const sessionId = "64b0000000000000000000bb";

let http: HttpServer;
let io: Server<IdeClientToServerEvents, IdeServerToClientEvents>;
let baseUrl: string;
let stored: TurnEvent[];
let subscribes: { turnId?: string; sessionId?: string; after?: number }[];
let connection: IdeConnection | null = null;

function toolEvents(from: number, to: number): TurnEvent[] {
  const events: TurnEvent[] = [];
  for (let seq = from; seq <= to; seq += 1) {
    events.push(
      event(seq, "tool_start", {
        callId: `c${seq}`,
        tool: "read_file",
        params: { path: `f${seq}` },
      }),
    );
  }
  return events;
}

function waitFor(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const tick = () => {
      if (check()) return resolve();
      if (Date.now() - started > timeoutMs)
        return reject(new Error(`timed out waiting for ${what}`));
      setTimeout(tick, 20);
    };
    tick();
  });
}

beforeEach(async () => {
  stored = toolEvents(1, 5);
  subscribes = [];
  http = createServer();
  io = new Server(http);
  const ide = io.of("/ide");
  ide.use((socket, next) => {
    if (socket.handshake.auth.token === "good") next();
    else next(new Error("unauthorized"));
  });
  ide.on("connection", (socket) => {
    socket.on("subscribe", (request, ack) => {
      subscribes.push(request);
      ack({ ok: true });
      if (request.turnId) {
        socket.join(`turn:${request.turnId}`);
        const events = stored.filter((e) => e.seq > (request.after ?? 0));
        if (events.length > 0)
          socket.emit("turn_events", { turnId: request.turnId, sessionId, events });
      }
    });
    socket.on("unsubscribe", (_request, ack) => ack({ ok: true }));
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
});

afterEach(async () => {
  connection?.close();
  connection = null;
  await io.close();
});

describe("IdeConnection", () => {
  it("replays a turn from the start, then resumes after the last seq when the connection drops", async () => {
    connection = new IdeConnection({ token: "good", baseUrl });
    const states: ConnectionState[] = [];
    connection.onState((state) => states.push(state));
    let view = emptyTurnView();
    connection.subscribeTurn(turnId, {
      after: () => view.lastSeq,
      onEvents: (message) => {
        view = applyEvents(view, message.events);
      },
    });
    await waitFor(() => view.lastSeq === 5, "the replay");
    expect(subscribes).toEqual([{ turnId, after: 0 }]);

    // The network drops; the turn goes on meanwhile.
    for (const socket of await io.of("/ide").fetchSockets()) {
      (socket as unknown as { conn: { close(): void } }).conn.close();
    }
    stored.push(...toolEvents(6, 8));
    await waitFor(() => view.lastSeq === 8, "the events after the drop");
    expect(subscribes[1]).toEqual({ turnId, after: 5 });
    expect(states).toContain("reconnecting");
    expect(connection.state).toBe("connected");
    expect(view.tools.map((tool) => tool.callId)).toEqual([
      "c1",
      "c2",
      "c3",
      "c4",
      "c5",
      "c6",
      "c7",
      "c8",
    ]);

    // Live events flow to the room as the server would send them.
    io.of("/ide")
      .to(`turn:${turnId}`)
      .emit("turn_events", { turnId, sessionId, events: toolEvents(9, 9) });
    await waitFor(() => view.lastSeq === 9, "a live event");
  });

  it("reconnects after the server closes the socket on purpose", async () => {
    connection = new IdeConnection({ token: "good", baseUrl });
    let view = emptyTurnView();
    connection.subscribeTurn(turnId, {
      after: () => view.lastSeq,
      onEvents: (message) => {
        view = applyEvents(view, message.events);
      },
    });
    await waitFor(() => view.lastSeq === 5, "the replay");
    io.of("/ide").disconnectSockets(true);
    stored.push(...toolEvents(6, 6));
    await waitFor(() => view.lastSeq === 6, "the resumed subscription");
    expect(subscribes.at(-1)).toEqual({ turnId, after: 5 });
  });

  it("reports a refused token as unauthorized", async () => {
    connection = new IdeConnection({ token: "stale", baseUrl });
    await waitFor(() => connection?.state === "unauthorized", "the refusal");
  });

  it("passes drone updates to listeners", async () => {
    connection = new IdeConnection({ token: "good", baseUrl });
    const names: string[] = [];
    connection.onDrone((drone) => names.push(drone.name));
    await waitFor(() => connection?.state === "connected", "the connection");
    io.of("/ide").emit("drone_update", {
      drone: {
        _id: "d1",
        name: "laptop",
        status: "online",
        activeTurns: 0,
        capacity: 1,
        lastSeenAt: null,
        hostname: null,
        platform: null,
        version: "1.0.0",
        sandbox: null,
        labels: [],
        ephemeral: false,
        outdated: false,
        updateRefused: null,
      },
    });
    await waitFor(() => names.length === 1, "the drone update");
    expect(names).toEqual(["laptop"]);
  });
});

describe("TurnStore following a turn", () => {
  it("folds each relayed batch into the view at once: one update per batch, not per event", async () => {
    stored = toolEvents(1, 200);
    connection = new IdeConnection({ token: "good", baseUrl });
    const store = new TurnStore(turnRecord({ _id: turnId, status: "processing" }), {
      api: new ApiClient({ baseUrl }),
    });
    let updates = 0;
    store.subscribe(() => {
      updates += 1;
    });
    const stop = store.follow(connection);
    await waitFor(() => store.view.lastSeq === 200, "the replay of 200 events");
    expect(updates).toBe(1);

    io.of("/ide")
      .to(`turn:${turnId}`)
      .emit("turn_events", { turnId, sessionId, events: toolEvents(201, 250) });
    await waitFor(() => store.view.lastSeq === 250, "a live batch of 50 events");
    expect(updates).toBe(2);
    expect(store.view.tools).toHaveLength(250);
    stop();
    store.dispose();
  });
});
