// The Activity page's reads over real HTTP and /ide: the user's turns across projects newest first
// with names, pages that hold under inserts, filters, counts, 400s, nobody else's turns, and the
// live activity notices reaching the user's sockets on either of two servers.
import { agentEvent, type TurnActivity } from "@gadget/protocol";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { GadgetServer } from "../server.ts";
import {
  ApiClient,
  IdeClient,
  registerDrone,
  setupWorkspace,
  signup,
  waitFor,
  waitForDrones,
} from "../testing/api-client.ts";
import { ScriptedDrone } from "../testing/scripted-drone.ts";
import { startTestServer, uniqueName } from "../testing/test-server.ts";

let server: GadgetServer;
let other: GadgetServer;
const closers: Array<{ close(): void }> = [];

beforeAll(async () => {
  const name = uniqueName("activity");
  const options = { mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl") };
  // Two instances on one database and Redis prefix, as two server processes.
  server = await startTestServer(options, name);
  other = await startTestServer(options, name);
});
afterAll(async () => {
  for (const item of closers) item.close();
  await server?.context.models.User.db.dropDatabase();
  await Promise.all([server?.close(), other?.close()]);
});

type Listed = {
  _id: string;
  status: string;
  prompt: string;
  project: string;
  projectName: string;
  sessionName: string;
  droneName: string | null;
  queuedReason?: string;
  activity?: { pass?: number; tool?: { name: string } | null; approvals?: { id: string }[] };
};

async function listAll(client: ApiClient, query: string, limit: number): Promise<Listed[]> {
  const turns: Listed[] = [];
  let cursor: string | null = null;
  do {
    const page = await client.get(
      `/api/turns?limit=${limit}${query}${cursor ? `&cursor=${cursor}` : ""}`,
    );
    expect(page.status).toBe(200);
    turns.push(...page.body.turns);
    cursor = page.body.nextCursor;
  } while (cursor);
  return turns;
}

async function post(
  client: ApiClient,
  workspace: { sessionId: string; providerId: string },
  prompt: string,
) {
  const response = await client.post(`/api/sessions/${workspace.sessionId}/turns`, {
    prompt,
    providerId: workspace.providerId,
  });
  expect(response.status).toBe(202);
  return String(response.body.turn._id);
}

describe("GET /api/turns", () => {
  it("lists the user's turns of every project newest first, with names, in pages that hold under inserts", async () => {
    const user = await signup(server.url, "lister");
    const alpha = await setupWorkspace(user, { projectName: "Alpha" });
    const beta = await setupWorkspace(user, { projectName: "Beta" });
    const created: string[] = [];
    for (let index = 0; index < 7; index++) {
      created.push(await post(user, index % 2 ? beta : alpha, `turn ${index}`));
    }
    const first = await user.get("/api/turns?limit=3");
    expect(first.body.turns.map((turn: Listed) => turn.prompt)).toEqual([
      "turn 6",
      "turn 5",
      "turn 4",
    ]);
    expect(first.body.turns[0]).toMatchObject({
      projectName: "Alpha",
      sessionName: "Session",
      project: alpha.projectId,
      status: "queued",
      droneName: null,
      // Turns 0, 2 and 4 of its session were posted before it.
      queuedReason: "Waiting for the session's earlier turns (position 3)",
    });
    expect(first.body.turns[1]).toMatchObject({ projectName: "Beta" });
    expect(first.body.turns[0].response).toBeUndefined();
    // A turn created between two pages shows up on the next first page, not in the middle.
    await post(user, alpha, "newer");
    const second = await user.get(`/api/turns?limit=3&cursor=${first.body.nextCursor}`);
    const third = await user.get(`/api/turns?limit=3&cursor=${second.body.nextCursor}`);
    expect([...second.body.turns, ...third.body.turns].map((turn: Listed) => turn.prompt)).toEqual([
      "turn 3",
      "turn 2",
      "turn 1",
      "turn 0",
    ]);
    expect(third.body.nextCursor).toBeNull();
    const all = await listAll(user, "", 2);
    expect(all.at(-1)).toMatchObject({
      prompt: "turn 0",
      queuedReason: "No drone of yours is online",
    });
    expect(all.map((turn) => turn.prompt)).toEqual([
      "newer",
      ...created.map((_, index) => `turn ${6 - index}`),
    ]);

    // Filters: one project, several statuses.
    const onlyBeta = await listAll(user, `&project=${beta.projectId}`, 50);
    expect(onlyBeta.map((turn) => turn.prompt)).toEqual(["turn 5", "turn 3", "turn 1"]);
    expect(await listAll(user, "&status=completed,failed", 50)).toEqual([]);
    expect((await listAll(user, "&status=queued,processing", 50)).length).toBe(8);

    const summary = await user.get("/api/turns/summary");
    expect(summary.body).toEqual({ running: 0, awaitingApproval: 0, queued: 8 });
  });

  it("never shows another user's turns, whatever the filter", async () => {
    const owner = await signup(server.url, "owner");
    const workspace = await setupWorkspace(owner, { projectName: "Private" });
    await post(owner, workspace, "secret plan");
    const stranger = await signup(server.url, "stranger");
    expect((await stranger.get("/api/turns")).body).toEqual({ turns: [], nextCursor: null });
    expect(
      (await stranger.get(`/api/turns?project=${workspace.projectId}&status=queued`)).body.turns,
    ).toEqual([]);
    expect((await stranger.get("/api/turns/summary")).body).toEqual({
      running: 0,
      awaitingApproval: 0,
      queued: 0,
    });
    expect((await new ApiClient(server.url).get("/api/turns")).status).toBe(401);
    expect((await new ApiClient(server.url).get("/api/turns/summary")).status).toBe(401);
  });

  it("answers bad filters with 400 and the field", async () => {
    const user = await signup(server.url, "picky");
    for (const [query, field] of [
      ["status=running", "status.0"],
      ["status=queued,,failed", "status.1"],
      ["project=nope", "project"],
      ["drone=123", "drone"],
      ["cursor=tomorrow", "cursor"],
      ["limit=0", "limit"],
      ["limit=1000", "limit"],
    ] as const) {
      const response = await user.get(`/api/turns?${query}`);
      expect(response.status, query).toBe(400);
      expect(response.body.error.code).toBe("validation_failed");
      expect(
        response.body.error.details.map((issue: { path: string }) => issue.path),
        query,
      ).toContain(field);
    }
  });

  it("shows a held turn's drone, pass, tool and pending approval, and filters by drone", async () => {
    const user = await signup(server.url, "held");
    const workspace = await setupWorkspace(user, { projectName: "Gamma", approval: "on-write" });
    const { droneId, credential } = await registerDrone(user, { name: "laptop", capacity: 1 });
    const drone = await ScriptedDrone.connect({ url: server.url, droneId, credential });
    closers.push(drone);
    await waitForDrones(user, "online");
    const running = await post(user, workspace, "runs");
    await drone.nextWorkOrder();
    await drone.stream(running, [
      agentEvent("status", { message: "Pass 2", pass: 2, model: "scripted-model" }),
      agentEvent("tool_start", { callId: "c1", tool: "read_file", params: { path: "a" } }),
      agentEvent("tool_result", { callId: "c1", tool: "read_file", ok: true, summary: "ok" }),
      agentEvent("tool_start", { callId: "c2", tool: "write_file", params: { path: "b" } }),
      agentEvent("approval", {
        approvals: [
          { id: "ap1", callId: "c2", tool: "write_file", params: {}, description: "Write b" },
        ],
      }),
    ]);
    // In another session: a turn of the same session would wait for this one instead.
    const other = await user.post(`/api/projects/${workspace.projectId}/sessions`, {
      name: "Other",
    });
    const waiting = await post(user, { ...workspace, sessionId: other.body.session._id }, "waits");
    const listed = (await waitFor(async () => {
      const { body } = await user.get("/api/turns");
      const turn = body.turns.find((item: Listed) => item._id === running);
      return turn?.status === "awaiting_approval" ? (body.turns as Listed[]) : undefined;
    })) as Listed[];
    expect(listed.find((turn) => turn._id === running)).toMatchObject({
      droneName: "laptop",
      activity: {
        pass: 2,
        tool: { name: "write_file" },
        approvals: [{ id: "ap1", tool: "write_file", description: "Write b" }],
      },
    });
    expect(listed.find((turn) => turn._id === waiting)?.queuedReason).toBe(
      "Your drones are busy (1 of 1 turns running)",
    );
    expect((await listAll(user, `&drone=${droneId}`, 50)).map((turn) => turn._id)).toEqual([
      running,
    ]);
    expect((await user.get("/api/turns/summary")).body).toEqual({
      running: 0,
      awaitingApproval: 1,
      queued: 1,
    });
  });
});

describe("activity subscription on /ide", () => {
  it("names the label a queued turn waits for, as its session page does", async () => {
    const user = await signup(server.url, "labels");
    const workspace = await setupWorkspace(user, { projectName: "renderer" });
    const { droneId, credential } = await registerDrone(user, { name: "cpu-box" });
    const drone = await ScriptedDrone.connect({ url: server.url, droneId, credential });
    closers.push(drone);
    const created = await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
      prompt: "Render on a GPU",
      providerId: workspace.providerId,
      requires: ["gpu"],
    });
    expect(created.status).toBe(202);
    const words = "Waiting for a drone with label gpu: no online drone of yours has it";
    await waitFor(
      async () => {
        const listed = (await user.get("/api/turns")).body.turns as Listed[];
        return listed.find((turn) => turn._id === created.body.turn._id)?.queuedReason === words;
      },
      20_000,
      "the label named",
    );
    // The drone gets the label: the turn is not said to wait for it any more (it is dispatched).
    expect((await user.patch(`/api/drones/${droneId}`, { labels: ["gpu"] })).status).toBe(200);
    const order = await drone.nextWorkOrder(20_000);
    expect(order.turnId).toBe(created.body.turn._id);
  });

  it("tells each of the user's sockets, on either server, what their turns do; nobody else", async () => {
    const user = await signup(server.url, "watcher");
    const workspace = await setupWorkspace(user, { projectName: "Delta" });
    const { droneId, credential } = await registerDrone(user, { name: "box", capacity: 2 });
    const drone = await ScriptedDrone.connect({ url: server.url, droneId, credential });
    closers.push(drone);
    await waitForDrones(user, "online");
    const here = await IdeClient.connect(server.url, user.token!);
    const there = await IdeClient.connect(other.url, user.token!);
    const stranger = await signup(server.url, "nosy");
    const nosy = await IdeClient.connect(server.url, stranger.token!);
    const unsubscribed = await IdeClient.connect(server.url, user.token!);
    closers.push(here, there, nosy, unsubscribed);
    const heard = new Map<IdeClient, TurnActivity[]>();
    for (const client of [here, there, nosy, unsubscribed]) {
      heard.set(client, []);
      client.socket.on("turn_activity", ({ activity }) => heard.get(client)!.push(...activity));
    }
    for (const client of [here, there, nosy]) {
      expect(await client.subscribe({ activity: true })).toEqual({ ok: true });
    }
    // Subscribing twice keeps one subscription (one notice per change).
    expect(await here.subscribe({ activity: true })).toEqual({ ok: true });

    const turnId = await post(user, workspace, "watched");
    await drone.nextWorkOrder();
    await drone.stream(turnId, [agentEvent("token", { text: "thinking out loud" })]);
    await drone.stream(turnId, [
      agentEvent("status", { message: "Pass 1", pass: 1 }),
      agentEvent("tool_start", { callId: "k1", tool: "run_command", params: { command: "ls" } }),
    ]);
    for (const client of [here, there]) {
      await waitFor(() => heard.get(client)!.some((notice) => notice.tool?.name === "run_command"));
    }
    await drone.stream(turnId, [
      agentEvent("tool_result", { callId: "k1", tool: "run_command", ok: true, summary: "ok" }),
    ]);
    // Both servers' sockets heard the tool end (the queued and dispatched notices have no tool either).
    const toolEnded = (client: IdeClient) => {
      const notices = heard.get(client)!;
      const start = notices.findIndex((notice) => notice.tool?.name === "run_command");
      return start >= 0 && notices.slice(start + 1).some((notice) => notice.tool === null);
    };
    for (const client of [here, there]) {
      await waitFor(() => toolEnded(client), 10_000, "the tool's end heard on both servers");
    }
    const mine = heard.get(here)!.filter((notice) => notice.turnId === turnId);
    // Queued, dispatched, the pass and tool, the tool's end: the streamed text alone told nothing.
    expect(mine.map((notice) => [notice.pass, notice.tool?.name ?? notice.tool])).toEqual([
      [undefined, null],
      [undefined, null],
      [1, "run_command"],
      [undefined, null],
    ]);
    expect(mine[1]).toMatchObject({ sessionId: workspace.sessionId, droneName: "box" });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(heard.get(nosy)).toEqual([]);
    expect(heard.get(unsubscribed)).toEqual([]);

    // Unsubscribed: no more notices.
    await here.socket.timeout(5_000).emitWithAck("unsubscribe", { activity: true });
    const before = heard.get(here)!.length;
    await drone.stream(turnId, [agentEvent("status", { message: "Pass 2", pass: 2 })]);
    await waitFor(() => heard.get(there)!.some((notice) => notice.pass === 2));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(heard.get(here)!.length).toBe(before);
  });
});
