// The live view: /ide subscriptions and Server-Sent Events replay what is stored after a seq,
// then follow live, with no gap and no duplicate even when events arrive during the catch-up.
import { agentEvent } from "@gadget/protocol";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { GadgetServer } from "../../server.ts";
import {
  IdeClient,
  registerDrone,
  setupWorkspace,
  signup,
  waitFor,
} from "../../testing/api-client.ts";
import { ScriptedDrone } from "../../testing/scripted-drone.ts";
import { startTestServer } from "../../testing/test-server.ts";

let server: GadgetServer;
const closers: Array<{ close(): void }> = [];

beforeAll(async () => {
  // Leases as in production: these tests stream thousands of events, and on a busy machine a
  // 1.5 s lease can run out between heartbeats — what they check is the relay, not leases.
  server = await startTestServer({
    mongoUrl: inject("mongoUrl"),
    redisUrl: inject("redisUrl"),
    droneGraceMs: 30_000,
  });
});
afterAll(async () => {
  for (const item of closers) item.close();
  await server?.context.models.User.db.dropDatabase();
  await server?.close();
});

async function runningTurn(name: string, on = server) {
  const user = await signup(on.url, name);
  const workspace = await setupWorkspace(user);
  const registered = await registerDrone(user, { name: `${name}-drone`, capacity: 4 });
  const drone = await ScriptedDrone.connect({
    url: on.url,
    droneId: registered.droneId,
    credential: registered.credential,
    capacity: 4,
  });
  closers.push(drone);
  // A session's turns run one at a time: turns meant to run together get sessions of their own.
  const start = async (sessionId = workspace.sessionId) => {
    const posted = await user.post(`/api/sessions/${sessionId}/turns`, {
      prompt: "Stream",
      providerId: workspace.providerId,
    });
    await drone.nextWorkOrder();
    return posted.body.turn._id as string;
  };
  return { user, workspace, drone, start, turnId: await start() };
}

const tokens = (count: number, from = 0) =>
  Array.from({ length: count }, (_, index) => agentEvent("token", { text: `t${from + index} ` }));

async function ide(token: string, on = server) {
  const client = await IdeClient.connect(on.url, token);
  closers.push(client);
  return client;
}

/** Reads an SSE response to its end; returns the events' ids and types. */
async function readSse(response: Response) {
  const text = await response.text();
  return text
    .split("\n\n")
    .filter((block) => block.startsWith("id: "))
    .map((block) => {
      const id = Number(/^id: (\d+)/.exec(block)?.[1]);
      const data = JSON.parse(/\ndata: (.*)$/m.exec(block)?.[1] ?? "null");
      return { id, type: data.type as string, seq: data.seq as number };
    });
}

describe("/ide subscriptions", () => {
  it("replays what is stored after `after`, then follows live", async () => {
    const { user, drone, turnId } = await runningTurn("replay");
    await drone.stream(turnId, tokens(5));
    const client = await ide(user.token!);
    expect(await client.subscribe({ turnId, after: 3 })).toEqual({ ok: true });
    expect(client.seqs(turnId)).toEqual([4, 5, 6, 7]);
    await drone.stream(turnId, tokens(3, 5));
    await waitFor(() => client.seqs(turnId).length === 7, 5_000, "live events");
    expect(client.seqs(turnId)).toEqual([4, 5, 6, 7, 8, 9, 10]);
    const [message] = client.events;
    expect(message).toMatchObject({ turnId, event: { seq: 4, type: "token" } });
  });

  it("has no gap and no duplicate when events arrive during the catch-up", async () => {
    const { user, drone, turnId } = await runningTurn("during");
    // Every batch must be taken (a real drone would send a refused one again): the server's
    // answer is the turn's last seq, what the subscriber must end up with.
    let lastSeq = 0;
    const stream = async (events: ReturnType<typeof tokens>) => {
      const answer = await drone.stream(turnId, events);
      if (!answer.ok) throw new Error(`batch refused: ${JSON.stringify(answer.error)}`);
      lastSeq = answer.lastSeq;
    };
    for (let batch = 0; batch < 6; batch++) await stream(tokens(250, batch * 250));
    const client = await ide(user.token!);
    let subscribed = false;
    const subscription = client.subscribe({ turnId, after: 0 }).then((ack) => {
      subscribed = true;
      return ack;
    });
    let duringCatchUp = 0;
    let sent = 0;
    while (!subscribed || sent < 5) {
      await stream(tokens(10, 2000 + sent * 10));
      sent++;
      if (!subscribed) duringCatchUp++;
    }
    expect(await subscription).toEqual({ ok: true });
    expect(duringCatchUp).toBeGreaterThan(0);
    expect(lastSeq).toBe(2 + 1500 + sent * 10);
    const all = Array.from({ length: lastSeq }, (_, index) => index + 1);
    await waitFor(() => client.seqs(turnId).length >= lastSeq, 25_000, "all events").catch(
      async (error: Error) => {
        const seen = new Set(client.seqs(turnId));
        const missing = all.filter((seq) => !seen.has(seq));
        const { body } = await user.get(`/api/turns/${turnId}`);
        throw new Error(
          `${error.message}: ${seen.size} of ${lastSeq}, missing ${missing.slice(0, 20).join(", ")}; turn ${body.turn?.status}`,
        );
      },
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(client.seqs(turnId)).toEqual(all);
  });

  it("follows every turn of a session, including turns created after subscribing", async () => {
    const { user, workspace, drone, start, turnId } = await runningTurn("session");
    const client = await ide(user.token!);
    expect(await client.subscribe({ sessionId: workspace.sessionId })).toEqual({ ok: true });
    expect(client.seqs(turnId)).toEqual([1, 2]);
    // The session's next turn starts once this one has finished.
    await drone.stream(turnId, [
      agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }),
    ]);
    const second = await start();
    await drone.stream(second, tokens(2));
    await waitFor(() => client.seqs(second).length === 4, 5_000, "second turn");
    expect(client.seqs(second)).toEqual([1, 2, 3, 4]);
    expect(client.events.every((message) => message.sessionId === workspace.sessionId)).toBe(true);
  });

  it("pushes turn_updates while a turn runs", async () => {
    const { user, drone, turnId } = await runningTurn("updates");
    const client = await ide(user.token!);
    const statuses: string[] = [];
    client.socket.on("turn_updates", ({ turns }) => {
      for (const turn of turns) if (turn._id === turnId) statuses.push(turn.status);
    });
    await drone.stream(turnId, [
      agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }),
    ]);
    await waitFor(() => statuses.includes("completed"), 5_000, "completed update");
  });

  it("gathers a user's turn changes into at most one turn_updates per interval", async () => {
    const interval = 1_500;
    const paced = await startTestServer({
      mongoUrl: inject("mongoUrl"),
      redisUrl: inject("redisUrl"),
      turnUpdateIntervalMs: interval,
    });
    try {
      const { user, workspace, drone, start } = await runningTurn("paced", paced);
      const turnIds: string[] = [];
      for (const name of ["one", "two", "three"]) {
        const created = await user.post(`/api/projects/${workspace.projectId}/sessions`, { name });
        turnIds.push(await start(created.body.session._id));
      }
      const client = await ide(user.token!, paced);
      const messages: Array<{ at: number; turns: Array<{ _id: string; status: string }> }> = [];
      client.socket.on("turn_updates", ({ turns }) => messages.push({ at: Date.now(), turns }));
      // What starting the turns pushed has gone out by now.
      await new Promise((resolve) => setTimeout(resolve, interval * 1.5));
      messages.length = 0;
      // The three turns end together: three status changes within one interval (long, so a busy
      // machine still takes the three inside it), pushed as fewer than three messages.
      await Promise.all(
        turnIds.map((turnId) =>
          drone.stream(turnId, [
            agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }),
          ]),
        ),
      );
      const completed = () =>
        new Set(
          messages.flatMap((message) =>
            message.turns.filter((turn) => turn.status === "completed").map((turn) => turn._id),
          ),
        );
      await waitFor(() => turnIds.every((id) => completed().has(id)), 5_000, "completed updates");
      expect(messages.length).toBeLessThan(turnIds.length);
      for (let index = 1; index < messages.length; index++) {
        expect(messages[index]!.at - messages[index - 1]!.at).toBeGreaterThan(interval / 2);
      }
    } finally {
      await paced.context.models.User.db.dropDatabase();
      await paced.close();
    }
  });

  it("refuses other users' turns and bad tokens", async () => {
    const { turnId } = await runningTurn("owner");
    const stranger = await signup(server.url, "stranger");
    const client = await ide(stranger.token!);
    const answer = await client.subscribe({ turnId });
    expect(answer).toMatchObject({ ok: false, error: { code: "not_found" } });
    const refused = await IdeClient.connect(server.url, "gat_bad").catch((error: Error) => error);
    expect(refused).toBeInstanceOf(Error);
    expect((refused as Error).message).toMatch(/token/i);
  });
});

describe("Server-Sent Events", () => {
  it("replays after Last-Event-ID, follows live and closes after done", async () => {
    const { user, drone, turnId } = await runningTurn("sse");
    await drone.stream(turnId, tokens(4));
    const response = await fetch(`${server.url}/api/turns/${turnId}/stream`, {
      headers: { authorization: `Bearer ${user.token}`, "last-event-id": "3" },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const reading = readSse(response);
    await new Promise((resolve) => setTimeout(resolve, 100));
    await drone.stream(turnId, [
      agentEvent("response", { message: "hi" }),
      agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }),
    ]);
    const events = await reading;
    expect(events.map((event) => event.id)).toEqual([4, 5, 6, 7, 8]);
    expect(events.map((event) => event.seq)).toEqual([4, 5, 6, 7, 8]);
    expect(events.at(-1)?.type).toBe("done");
  });

  it("replays a finished turn with ?after= and closes", async () => {
    const { user, drone, turnId } = await runningTurn("sse-after");
    await drone.stream(turnId, [
      ...tokens(2),
      agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }),
    ]);
    const response = await fetch(`${server.url}/api/turns/${turnId}/stream?after=4`, {
      headers: { authorization: `Bearer ${user.token}` },
    });
    expect((await readSse(response)).map((event) => event.type)).toEqual(["done"]);
    const stranger = await signup(server.url, "sse-stranger");
    const denied = await fetch(`${server.url}/api/turns/${turnId}/stream`, {
      headers: { authorization: `Bearer ${stranger.token}` },
    });
    expect(denied.status).toBe(404);
  });
});

describe("stored event pages", () => {
  it("pages a long turn in seq order, and reads on past a gap in the stored seqs", async () => {
    const { user, drone, turnId } = await runningTurn("pages");
    for (let batch = 0; batch < 4; batch++) await drone.stream(turnId, tokens(300, batch * 300));
    const lastSeq = 2 + 1200;
    const seqs: number[] = [];
    for (let after = 0, pages = 0; pages < 10; pages++) {
      const page = await user.get(`/api/turns/${turnId}/events?after=${after}&limit=500`);
      const events = page.body.events as Array<{ seq: number }>;
      seqs.push(...events.map((event) => event.seq));
      if (events.length < 500) break;
      after = events.at(-1)!.seq;
    }
    expect(seqs).toEqual(Array.from({ length: lastSeq }, (_, index) => index + 1));

    // A page whose seq range has a hole (lost to an operator's cleanup, say) still holds `limit`
    // events: it reads on past the range.
    await server.context.models.TurnEvent.deleteMany({
      turn: turnId,
      seq: { $gte: 300, $lte: 309 },
    });
    const page = await user.get(`/api/turns/${turnId}/events?after=249&limit=100`);
    expect(page.body.events.map((event: { seq: number }) => event.seq)).toEqual([
      ...Array.from({ length: 50 }, (_, index) => 250 + index),
      ...Array.from({ length: 50 }, (_, index) => 310 + index),
    ]);
    // And a browser catching up from before the hole gets everything after it.
    const client = await ide(user.token!);
    expect(await client.subscribe({ turnId, after: 0 })).toEqual({ ok: true });
    expect(client.seqs(turnId)).toEqual(
      Array.from({ length: lastSeq }, (_, index) => index + 1).filter(
        (seq) => seq < 300 || seq > 309,
      ),
    );
  });
});
