// @vitest-environment node
// The Activity page's live state against a real Socket.IO server speaking socket.ts: the activity
// subscription asked for once and again after a reconnect, notices moving a row's pass and tool,
// turn_updates moving a turn from live to finished, a new turn read in; and the counts read again
// on a status change, with the news a notification is made of.
import { createServer, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import type {
  ActivityTurn,
  ChatTurn,
  IdeClientToServerEvents,
  IdeServerToClientEvents,
} from "@gadget/protocol";
import { Server } from "socket.io";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ApiClient } from "../api/client.ts";
import { turnRecord } from "../test/events.ts";
import { ActivityStore } from "./activity-store.ts";
import { IdeConnection } from "./connection.ts";
import { TurnSummaryStore } from "./turn-summary.ts";

let http: HttpServer;
let io: Server<IdeClientToServerEvents, IdeServerToClientEvents>;
let baseUrl: string;
let listed: ActivityTurn[];
let summary = { running: 1, awaitingApproval: 0, queued: 0 };
let activitySubscribes = 0;
let connection: IdeConnection | null = null;

function row(id: string, status: ChatTurn["status"]): ActivityTurn {
  const { response: _response, ...turn } = turnRecord({ _id: id, status });
  return {
    ...turn,
    project: "p1",
    projectName: "calculator",
    sessionName: "Docs",
    droneName: "laptop",
  };
}

function waitFor(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const tick = () => {
      if (check()) return resolve();
      if (Date.now() - started > timeoutMs) return reject(new Error(`timed out: ${what}`));
      setTimeout(tick, 20);
    };
    tick();
  });
}

beforeEach(async () => {
  listed = [row("a1", "processing")];
  summary = { running: 1, awaitingApproval: 0, queued: 0 };
  activitySubscribes = 0;
  http = createServer((request, response) => {
    const url = new URL(request.url ?? "/", "http://localhost");
    response.setHeader("content-type", "application/json");
    if (url.pathname === "/api/turns/summary") return response.end(JSON.stringify(summary));
    const statuses = (url.searchParams.get("status") ?? "").split(",");
    response.end(
      JSON.stringify({
        turns: listed.filter((turn) => statuses.includes(turn.status)),
        nextCursor: null,
      }),
    );
  });
  io = new Server(http);
  io.of("/ide").on("connection", (socket) => {
    socket.on("subscribe", (request, ack) => {
      if (request.activity) activitySubscribes += 1;
      ack({ ok: true });
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

describe("ActivityStore", () => {
  it("keeps rows live from activity notices and turn updates", async () => {
    const api = new ApiClient({ baseUrl });
    connection = new IdeConnection({ token: "t", baseUrl });
    const store = new ActivityStore({ api, filters: {} });
    store.attach(connection);
    // A second listener shares the one subscription.
    const stopOther = connection.subscribeActivity(() => {});
    await store.load();
    await waitFor(() => activitySubscribes === 1, "activity subscription");
    expect(store.getSnapshot().live.map((turn) => turn._id)).toEqual(["a1"]);

    const ide = io.of("/ide");
    ide.emit("turn_activity", {
      activity: [
        {
          turnId: "a1",
          sessionId: "s1",
          seq: 5,
          at: new Date(),
          pass: 2,
          tool: { name: "read_file", callId: "c1", startedAt: new Date() },
        },
        // Not listed here: ignored.
        { turnId: "zz", sessionId: "s1", seq: 1, at: new Date(), pass: 9 },
      ],
    });
    await waitFor(() => store.getSnapshot().live[0]?.activity?.pass === 2, "pass 2");
    expect(store.getSnapshot().live[0]?.activity?.tool?.name).toBe("read_file");
    // An older notice, arriving late, changes nothing; a newer one ends the tool.
    ide.emit("turn_activity", {
      activity: [
        { turnId: "a1", sessionId: "s1", seq: 4, at: new Date(), pass: 1 },
        { turnId: "a1", sessionId: "s1", seq: 6, at: new Date(), tool: null },
      ],
    });
    await waitFor(() => store.getSnapshot().live[0]?.activity?.tool === null, "tool ended");
    expect(store.getSnapshot().live[0]?.activity?.pass).toBe(2);

    // A new turn elsewhere is read in; a finished one moves down.
    listed = [row("a2", "queued"), row("a1", "completed")];
    ide.emit("turn_updates", {
      turns: [
        turnRecord({ _id: "a2", status: "queued" }),
        turnRecord({ _id: "a1", status: "completed" }),
      ],
    });
    await waitFor(() => store.getSnapshot().live[0]?._id === "a2", "a2 live");
    expect(store.getSnapshot().live.map((turn) => turn._id)).toEqual(["a2"]);
    expect(store.getSnapshot().finished.map((turn) => turn._id)).toEqual(["a1"]);

    // After a dropped connection the subscription is asked for again.
    ide.disconnectSockets();
    await waitFor(() => activitySubscribes === 2, "subscribed again");
    stopOther();
    store.dispose();
  });

  it("shows a task's changes in one render, later ones with the next frame, other rows untouched", async () => {
    listed = [row("a1", "processing"), row("a2", "processing")];
    const store = new ActivityStore({ api: new ApiClient({ baseUrl }), filters: {} });
    await store.load();
    let renders = 0;
    store.subscribe(() => renders++);
    const notice = (turnId: string, seq: number, pass: number) => ({
      turnId,
      sessionId: "s1",
      seq,
      at: new Date(),
      pass,
    });
    const before = store.getSnapshot();
    // Three messages in one task: one render, at the end of it.
    store.applyActivity([notice("a1", 1, 1)]);
    store.applyActivity([notice("a1", 2, 2)]);
    store.applyTurn({ ...turnRecord({ _id: "a1", status: "processing" }), lastSeq: 2 });
    expect(renders).toBe(0);
    await Promise.resolve();
    expect(renders).toBe(1);
    const first = store.getSnapshot();
    const byId = (snapshot: typeof first, id: string) =>
      snapshot.live.find((turn) => turn._id === id);
    expect(byId(first, "a1")?.activity?.pass).toBe(2);
    expect(byId(first, "a2")).toBe(byId(before, "a2"));
    expect(first.finished).toBe(before.finished);
    // The next change in the same frame waits for the next one.
    store.applyActivity([notice("a2", 1, 3)]);
    await Promise.resolve();
    expect(renders).toBe(1);
    await waitFor(() => renders === 2, "the next frame");
    const second = store.getSnapshot();
    expect(byId(second, "a2")?.activity?.pass).toBe(3);
    expect(byId(second, "a1")).toBe(byId(first, "a1"));
    store.dispose();
  });
});

describe("TurnSummaryStore", () => {
  it("reads the counts again when a turn changes status, and tells its news once", async () => {
    const api = new ApiClient({ baseUrl });
    connection = new IdeConnection({ token: "t", baseUrl });
    const store = new TurnSummaryStore({ api });
    const news: string[] = [];
    store.onNews((turn, what) => news.push(`${turn._id}:${what}`));
    store.attach(connection);
    await waitFor(() => store.getSnapshot().running === 1, "first counts");
    summary = { running: 0, awaitingApproval: 1, queued: 0 };
    const ide = io.of("/ide");
    await waitFor(() => connection?.state === "connected", "connected");
    ide.emit("turn_updates", { turns: [turnRecord({ _id: "a1", status: "awaiting_approval" })] });
    await waitFor(() => store.getSnapshot().awaitingApproval === 1, "needs you");
    // The same status again (a streamed update) is no news.
    ide.emit("turn_updates", { turns: [turnRecord({ _id: "a1", status: "awaiting_approval" })] });
    ide.emit("turn_updates", { turns: [turnRecord({ _id: "a1", status: "failed" })] });
    await waitFor(() => news.length === 2, "two news");
    expect(news).toEqual(["a1:awaiting_approval", "a1:failed"]);
  });
});
