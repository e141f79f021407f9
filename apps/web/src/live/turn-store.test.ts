// TurnStore: missing events are read over REST, past turns load page by page, stale records lose.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { TurnEvent } from "@gadget/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiClient } from "../api/client.ts";
import { longTurn, turnRecord } from "../test/events.ts";
import { newerTurn, TurnStore } from "./turn-store.ts";

const turnId = "64b000000000000000000001";
const stored: TurnEvent[] = longTurn(2500);
const requests: string[] = [];
let server: Server;
let api: ApiClient;

beforeAll(async () => {
  server = createServer((request, response) => {
    const url = new URL(request.url ?? "/", "http://localhost");
    requests.push(url.pathname + url.search);
    if (url.pathname === `/api/turns/${turnId}/events`) {
      const after = Number(url.searchParams.get("after") ?? 0);
      const limit = Number(url.searchParams.get("limit") ?? 200);
      const events = stored.filter((item) => item.seq > after).slice(0, limit);
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify({ events }));
      return;
    }
    response.writeHead(404, { "content-type": "application/json" });
    response.end(
      JSON.stringify({ error: { code: "not_found", message: "This turn does not exist." } }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  api = new ApiClient({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function waitFor(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const tick = () => {
      if (check()) return resolve();
      if (Date.now() - started > timeoutMs) return reject(new Error("timed out"));
      setTimeout(tick, 10);
    };
    tick();
  });
}

describe("TurnStore", () => {
  it("reads missing events over REST when a gap does not fill by itself", async () => {
    const store = new TurnStore(turnRecord({ _id: turnId }), { api, gapWaitMs: 30 });
    store.applyEvents(stored.slice(0, 2));
    store.applyEvents([stored[9]!]);
    expect(store.view.lastSeq).toBe(2);
    await waitFor(() => store.view.lastSeq >= 10);
    expect(requests).toContain(`/api/turns/${turnId}/events?after=2&limit=1000`);
    expect(store.view.pending.size).toBe(0);
    store.dispose();
  });

  it("loads every stored event of a past turn, page by page, and tells listeners", async () => {
    const store = new TurnStore(turnRecord({ _id: turnId, status: "completed" }), { api });
    let notified = 0;
    store.subscribe(() => {
      notified += 1;
    });
    await store.loadEvents();
    const snapshot = store.getSnapshot();
    expect(snapshot.view.lastSeq).toBe(2500);
    expect(snapshot.eventsLoaded).toBe(true);
    expect(notified).toBeGreaterThan(0);
    store.dispose();
  });

  it("says in words when the steps cannot be read", async () => {
    const store = new TurnStore(turnRecord({ _id: "64b0000000000000000000ff" }), { api });
    await store.loadEvents();
    expect(store.getSnapshot().loadError).toBe(
      "Could not read this turn's steps: This turn does not exist.",
    );
  });
});

describe("newerTurn", () => {
  it("keeps a finished turn over a late copy that still says processing", () => {
    const done = turnRecord({ status: "completed", lastSeq: 40 });
    const late = turnRecord({ status: "processing", lastSeq: 30 });
    expect(newerTurn(done, late)).toBe(done);
  });

  it("takes a resumed turn", () => {
    const interrupted = turnRecord({ status: "interrupted", lastSeq: 40 });
    const resumed = turnRecord({ status: "queued", lastSeq: 40 });
    expect(newerTurn(interrupted, resumed)).toBe(resumed);
  });

  it("takes the copy with more events", () => {
    const older = turnRecord({ status: "processing", lastSeq: 10 });
    const newer = turnRecord({ status: "awaiting_approval", lastSeq: 12 });
    expect(newerTurn(older, newer)).toBe(newer);
    expect(newerTurn(newer, older)).toBe(newer);
  });
});
