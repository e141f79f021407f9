// Talking to a running turn end to end, with a real drone and the scripted model: a message sent
// during a turn is journaled by the drone and reaches the model's next request after the tool
// results of the pass it arrived in (or with the decision of an approval it waits for); an
// interrupting one stops a running command; a limit that asks (passes, or a cost budget priced
// from the model's reported usage) pauses the turn until extended (or ends it after the timeout); turns posted while one runs wait on the server and each request
// holds the answers before it, one edited and one withdrawn while they wait; a drone killed before
// it took a message takes it after its restart; a message the turn ends without becomes the next
// turn.
import { existsSync, readFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import type { GadgetServer } from "@gadget/server";
import { startTestServer } from "@gadget/server/testing";
import { type ScriptedModel, type ScriptedRequest, startScriptedModel } from "@gadget/testkit";
import { type NetworkLink, startNetworkLink } from "@gadget/testkit/browser";
import { type ApiClient, signup, waitFor } from "@gadget/testkit/wire";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  createProjectSession,
  type DroneProcess,
  freshHome,
  registerWithCli,
  startCli,
  turnEvents,
  waitForDroneOnline,
  waitForTurn,
} from "./helpers.ts";

/** The text of each message of a model request, with its role. */
function transcript(request: ScriptedRequest | { body: ScriptedRequest["body"] }) {
  return request.body.messages.map((message) => ({
    role: message.role,
    content:
      typeof message.content === "string" ? message.content : JSON.stringify(message.content),
  }));
}

/** The user goal a request's closing state message names (the turn's prompt). */
function goalOf(request: ScriptedRequest): string {
  const state = transcript(request).at(-1)?.content ?? "";
  return /### User goal\n(.*)\n/.exec(state)?.[1] ?? "";
}

describe("steering and queueing end to end", () => {
  let server: GadgetServer;
  let model: ScriptedModel;
  let user: ApiClient;
  let drone: DroneProcess;
  let home: string;
  let config: string;
  let link: NetworkLink;
  let workspace: string;
  let providerId: string;
  let sessionId: string;

  /** Starts the drone (again), reaching the server through the link the tests can cut. */
  async function startDrone() {
    drone = startCli(["--config", config], home, { GADGET_DRONE_HEARTBEAT_MS: "500" });
    await waitForDroneOnline(user, "steered");
  }

  beforeAll(async () => {
    // A grace long enough for a killed drone to be started again and take its turn back.
    server = await startTestServer(
      { mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl"), droneGraceMs: 20_000 },
      `drone_steering_${process.pid}`,
    );
    model = await startScriptedModel();
    user = await signup(server.url, "steering");
    home = await freshHome();
    workspace = path.join(home, "workspaces");
    config = path.join(home, "drone.json");
    const registered = await registerWithCli(user, server.url, {
      name: "steered",
      workspace,
      config,
      home,
    });
    expect(registered.code, registered.stderr).toBe(0);
    link = await startNetworkLink(server.url);
    const settings = JSON.parse(await readFile(config, "utf8"));
    await writeFile(config, JSON.stringify({ ...settings, server: link.url }), { mode: 0o600 });
    await startDrone();
    ({ providerId, sessionId } = await createProjectSession(user, {
      name: "Steer",
      modelUrl: model.baseUrl,
      files: { "README.md": "# Steer\n", LICENSE: "MIT\n" },
    }));
  });

  afterAll(async () => {
    drone?.child.kill("SIGKILL");
    await link?.close();
    await model?.close();
    await server?.close();
  });

  async function postTurn(prompt: string) {
    const created = await user.post(`/api/sessions/${sessionId}/turns`, { prompt, providerId });
    expect(created.status).toBe(202);
    return created.body.turn as { _id: string; waiting: unknown };
  }

  /** Whether the drone's journal of the turn holds the message (written before it answers). */
  const journaled = (turnId: string, messageId: string) => {
    const file = path.join(workspace, ".journal", `${turnId}.jsonl`);
    return existsSync(file) && readFileSync(file, "utf8").includes(messageId);
  };

  it("puts a message sent during a pass into the next request, after that pass's tool results", async () => {
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const requests: ScriptedRequest[] = [];
    model.setHandler(async (request) => {
      requests.push(request);
      if (requests.length === 1) {
        await released;
        return { toolCalls: [{ name: "read_file", arguments: { path: "README.md" } }] };
      }
      return { text: "The readme and the licence are read." };
    });
    const turn = await postTurn("Read the readme");
    await waitFor(async () => requests.length === 1, 30_000, "the first model call");
    const posted = await user.post(`/api/turns/${turn._id}/messages`, {
      text: "Also read the licence",
    });
    expect(posted.status).toBe(202);
    const messageId = posted.body.message._id as string;
    await waitFor(async () => journaled(turn._id, messageId), 10_000, "the drone to journal it");
    release();

    const finished = await waitForTurn(user, turn._id, ["completed", "failed"], 60_000);
    expect(finished.status).toBe("completed");
    model.setHandler(undefined);
    const second = transcript(requests[1] as ScriptedRequest);
    const tool = second.findIndex((message) => message.role === "tool");
    expect(tool).toBeGreaterThan(0);
    expect(second[tool + 1]).toEqual({ role: "user", content: "Also read the licence" });
    const events = await turnEvents(user, turn._id);
    expect(
      events.filter((event) => event.type === "user_message").map((event) => event.data),
    ).toEqual([{ messageId, text: "Also read the licence" }]);
    const messages = (await user.get(`/api/turns/${turn._id}/messages`)).body.messages;
    expect(messages).toEqual([expect.objectContaining({ _id: messageId, status: "delivered" })]);
  });

  it("stops a running command for an interrupting message and sends it in the very next request", async () => {
    const requests: ScriptedRequest[] = [];
    model.setHandler(async (request) => {
      requests.push(request);
      if (requests.length === 1) {
        return { toolCalls: [{ name: "run_command", arguments: { command: "sleep 60" } }] };
      }
      return { text: "Stopped waiting." };
    });
    const turn = await postTurn("Wait a minute");
    await waitFor(
      async () =>
        (await turnEvents(user, turn._id)).some(
          (event) => event.type === "tool_start" && event.data.tool === "run_command",
        ),
      30_000,
      "the command to start",
    );
    const posted = await user.post(`/api/turns/${turn._id}/messages`, {
      text: "Never mind, stop",
      interrupt: true,
    });
    expect(posted.status).toBe(202);
    const finished = await waitForTurn(user, turn._id, ["completed", "failed"], 30_000);
    expect(finished.status).toBe("completed");
    model.setHandler(undefined);
    expect(requests).toHaveLength(2);
    const second = transcript(requests[1] as ScriptedRequest);
    expect(second.find((message) => message.role === "tool")?.content).toContain(
      "the user interrupted",
    );
    expect(second.some((message) => message.content === "Never mind, stop")).toBe(true);
  });

  it("delivers a message sent while the turn waits for approval with the decision", async () => {
    const guarded = await createProjectSession(user, {
      name: "Guarded",
      modelUrl: model.baseUrl,
      approval: "on-write",
    });
    const requests: ScriptedRequest[] = [];
    model.setHandler(async (request) => {
      requests.push(request);
      return requests.length === 1
        ? { toolCalls: [{ name: "write_file", arguments: { path: "notes.txt", content: "n\n" } }] }
        : { text: "Written, in French as asked." };
    });
    const created = await user.post(`/api/sessions/${guarded.sessionId}/turns`, {
      prompt: "Write the notes",
      providerId: guarded.providerId,
    });
    const turnId = created.body.turn._id as string;
    await waitForTurn(user, turnId, ["awaiting_approval"], 30_000);
    const posted = await user.post(`/api/turns/${turnId}/messages`, { text: "Answer in French" });
    expect(posted.status).toBe(202);
    await waitFor(
      async () => journaled(turnId, posted.body.message._id),
      10_000,
      "the drone to journal it",
    );
    const approval = (await turnEvents(user, turnId)).find((event) => event.type === "approval");
    await user.post(`/api/turns/${turnId}/approvals/${approval.data.approvals[0].id}`, {
      approve: true,
    });
    expect((await waitForTurn(user, turnId, ["completed", "failed"], 30_000)).status).toBe(
      "completed",
    );
    model.setHandler(undefined);
    expect(requests).toHaveLength(2);
    const second = transcript(requests[1] as ScriptedRequest);
    const tool = second.findIndex((message) => message.role === "tool");
    expect(second[tool + 1]).toEqual({ role: "user", content: "Answer in French" });
  });

  it("pauses a turn at a limit that asks, extends it once, and lets another end with the synthesis", async () => {
    const readme = { toolCalls: [{ name: "read_file", arguments: { path: "README.md" } }] };
    model.enqueue(readme, { text: "Finished with the extra pass." });
    const created = await user.post(`/api/sessions/${sessionId}/turns`, {
      prompt: "Read and answer",
      providerId,
      limits: { maxPasses: 1, onReach: "ask" },
    });
    const turnId = created.body.turn._id as string;
    const paused = await waitForTurn(user, turnId, ["awaiting_approval"], 30_000);
    expect(paused.waiting).toEqual({ reason: "budget", limit: "maxPasses", used: 1 });
    const approval = (await turnEvents(user, turnId)).find((event) => event.type === "approval");
    const request = approval.data.approvals[0];
    expect(request).toMatchObject({ kind: "budget", params: { limit: "maxPasses", value: 1 } });
    const decided = await user.post(`/api/turns/${turnId}/approvals/${request.id}`, {
      approve: true,
      input: { extendBy: 1 },
    });
    expect(decided.status).toBe(200);
    const extended = await waitForTurn(user, turnId, ["completed", "failed"], 30_000);
    expect(extended).toMatchObject({
      status: "completed",
      exitReason: "completed",
      response: "Finished with the extra pass.",
    });

    model.enqueue(readme, { text: "What I gathered before the limit." });
    const unanswered = await user.post(`/api/sessions/${sessionId}/turns`, {
      prompt: "Read and stop",
      providerId,
      limits: { maxPasses: 1, onReach: "ask", askTimeoutMs: 500 },
    });
    const ended = await waitForTurn(
      user,
      unanswered.body.turn._id,
      ["completed", "failed"],
      30_000,
    );
    expect(ended).toMatchObject({
      exitReason: "max_passes",
      response: "What I gathered before the limit.",
    });
  });

  it("pauses a turn at its cost budget and, extended once, lets it finish", async () => {
    // $2 a million tokens in, $10 out: the first call costs $0.40 of a $0.30 budget.
    const priced = await user.post("/api/providers", {
      name: "priced",
      baseUrl: model.baseUrl,
      apiKey: "sk-x",
      modelId: "scripted-model",
      pricing: { inputPerMTok: 2, outputPerMTok: 10 },
    });
    expect(priced.status).toBe(201);
    const requestsBefore = model.chatRequests.length;
    model.enqueue(
      {
        toolCalls: [{ name: "read_file", arguments: { path: "README.md" } }],
        usage: { promptTokens: 100_000, completionTokens: 20_000 },
      },
      {
        text: "Finished within the extended budget.",
        usage: { promptTokens: 100_000, completionTokens: 0 },
      },
    );
    const created = await user.post(`/api/sessions/${sessionId}/turns`, {
      prompt: "Read within budget",
      providerId: priced.body.provider._id,
      limits: { costBudget: 0.3, onReach: "ask" },
    });
    const turnId = created.body.turn._id as string;
    const paused = await waitForTurn(user, turnId, ["awaiting_approval"], 30_000);
    expect(paused.waiting).toEqual({ reason: "budget", limit: "costBudget", used: 0.4 });
    const approval = (await turnEvents(user, turnId)).find((event) => event.type === "approval");
    const request = approval.data.approvals[0];
    expect(request).toMatchObject({
      kind: "budget",
      params: { limit: "costBudget", used: 0.4, value: 0.3 },
    });
    expect(model.chatRequests).toHaveLength(requestsBefore + 1);
    const decided = await user.post(`/api/turns/${turnId}/approvals/${request.id}`, {
      approve: true,
      input: { extendBy: 0.5 },
    });
    expect(decided.status).toBe(200);
    const extended = await waitForTurn(user, turnId, ["completed", "failed"], 30_000);
    expect(extended).toMatchObject({
      status: "completed",
      exitReason: "completed",
      response: "Finished within the extended budget.",
    });
    // $0.60 spent of the $0.80 the budget became.
    expect(extended.stats.cost).toBeCloseTo(0.6, 9);
    const statuses = (await turnEvents(user, turnId))
      .filter((event) => event.type === "status" && event.data.phase === "budget")
      .map((event) => event.data.message);
    expect(statuses).toEqual(["The limit costBudget was extended by 0.5 to 0.8"]);
  });

  it("runs turns posted during a turn after it, in order, each request with the answers before it", async () => {
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const requests: ScriptedRequest[] = [];
    model.setHandler(async (request) => {
      requests.push(request);
      const all = transcript(request)
        .map((message) => message.content)
        .join("\n");
      if (all.includes("Name a colour") && !all.includes("Name a fruit")) {
        await released;
        return { text: "Blue." };
      }
      return { text: all.includes("Name a vegetable") ? "Carrot." : "Apple." };
    });
    const first = await postTurn("Name a colour");
    await waitFor(async () => requests.length === 1, 30_000, "the first model call");
    const second = await postTurn("Name a fruit");
    const third = await postTurn("Name a vegetable");
    expect(second.waiting).toEqual({ reason: "session_busy", position: 1 });
    expect(third.waiting).toEqual({ reason: "session_busy", position: 2 });
    release();
    for (const turn of [first, second, third]) {
      expect((await waitForTurn(user, turn._id, ["completed", "failed"], 60_000)).status).toBe(
        "completed",
      );
    }
    model.setHandler(undefined);
    expect(requests).toHaveLength(3);
    const asked = requests.map((request) => transcript(request).map((message) => message.content));
    // The fruit's request holds the colour's exchange; the vegetable's both.
    expect(asked[1]).toEqual(expect.arrayContaining(["Name a colour", "Blue.", "Name a fruit"]));
    expect(asked[2]).toEqual(
      expect.arrayContaining([
        "Name a colour",
        "Blue.",
        "Name a fruit",
        "Apple.",
        "Name a vegetable",
      ]),
    );
  });

  it("runs an edited queued turn with its new prompt, skips a withdrawn one, and keeps the order", async () => {
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const prompts: string[] = [];
    model.setHandler(async (request) => {
      const prompt = goalOf(request);
      prompts.push(prompt);
      if (prompts.length === 1) await released;
      return { text: `Counted: ${prompt}` };
    });
    const first = await postTurn("Count one");
    await waitFor(async () => prompts.length === 1, 30_000, "the first model call");
    const second = await postTurn("Count two");
    const third = await postTurn("Count three");
    const fourth = await postTurn("Count four");
    try {
      const edited = await user.patch(`/api/turns/${second._id}`, { prompt: "Count two, edited" });
      expect(edited.status, JSON.stringify(edited.body)).toBe(200);
      const withdrawn = await user.post(`/api/turns/${third._id}/cancel`, {});
      expect(withdrawn.status, JSON.stringify(withdrawn.body)).toBe(202);
    } finally {
      release(); // a failure here must not hold the session's queue for the tests after it
    }
    for (const turn of [first, second, fourth]) {
      expect((await waitForTurn(user, turn._id, ["completed", "failed"], 60_000)).status).toBe(
        "completed",
      );
    }
    model.setHandler(undefined);
    expect((await user.get(`/api/turns/${third._id}`)).body.turn.status).toBe("cancelled");
    expect(prompts).toEqual(["Count one", "Count two, edited", "Count four"]);
    expect((await user.get(`/api/turns/${second._id}`)).body.turn.prompt).toBe("Count two, edited");
  });

  it("delivers messages to a drone killed before it took them, once restarted, losing none", async () => {
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const requests: ScriptedRequest[] = [];
    const readme = { toolCalls: [{ name: "read_file", arguments: { path: "README.md" } }] };
    model.setHandler(async (request) => {
      requests.push(request);
      if (requests.length === 1) {
        await released; // answered to a drone that is gone
        return readme;
      }
      const said = transcript(request).map((message) => message.content);
      return said.includes("First word") && said.includes("Second word")
        ? { text: "Both words heard." }
        : readme;
    });
    const turn = await postTurn("Listen for two words");
    await waitFor(async () => requests.length === 1, 30_000, "the first model call");
    const first = await user.post(`/api/turns/${turn._id}/messages`, { text: "First word" });
    expect(first.status).toBe(202);
    await waitFor(
      async () => journaled(turn._id, first.body.message._id),
      10_000,
      "the drone to journal it",
    );
    drone.child.kill("SIGKILL");
    await drone.exited;
    release();
    // A second message while no drone holds the turn: stored, sent when the drone is back.
    const second = await user.post(`/api/turns/${turn._id}/messages`, { text: "Second word" });
    expect(second.status).toBe(202);
    await startDrone();

    const finished = await waitForTurn(user, turn._id, ["completed", "failed"], 45_000);
    model.setHandler(undefined);
    expect(finished).toMatchObject({ status: "completed", response: "Both words heard." });
    const ids = [first.body.message._id, second.body.message._id];
    const taken = (await turnEvents(user, turn._id))
      .filter((event) => event.type === "user_message")
      .map((event) => event.data.messageId);
    expect(taken).toEqual(ids);
    const messages = (await user.get(`/api/turns/${turn._id}/messages`)).body.messages;
    expect(messages.map((message: { status: string }) => message.status)).toEqual([
      "delivered",
      "delivered",
    ]);
    const last = transcript(requests.at(-1) as ScriptedRequest);
    expect(last).toEqual(
      expect.arrayContaining([
        { role: "user", content: "First word" },
        { role: "user", content: "Second word" },
      ]),
    );
  }, 60_000);

  it("makes a message the turn ended without into the session's next turn, which runs", async () => {
    const requests: ScriptedRequest[] = [];
    let messageId = "";
    let posting: Promise<{ _id: string }> | undefined;
    model.setHandler(async (request) => {
      requests.push(request);
      if (requests.length > 1) return { text: "Goodbye." };
      // The message is posted while the drone is cut off, so the turn ends before it arrives.
      link.setDown(true);
      const turnId = (await posting)?._id;
      await waitFor(
        async () =>
          (await user.get(`/api/turns/${turnId}`)).body.turn.waiting?.reason === "drone_offline",
        10_000,
        "the turn to wait for its drone",
      );
      const posted = await user.post(`/api/turns/${turnId}/messages`, {
        text: "Then say goodbye",
      });
      expect(posted.status).toBe(202);
      messageId = posted.body.message._id;
      return { text: "Hello." };
    });
    posting = postTurn("Say hello");
    const turn = await posting;
    const journal = path.join(workspace, ".journal", `${turn._id}.jsonl`);
    await waitFor(
      async () => existsSync(journal) && readFileSync(journal, "utf8").includes('"type":"done"'),
      30_000,
      "the drone to end the turn offline",
    );
    link.setDown(false);
    expect((await waitForTurn(user, turn._id, ["completed", "failed"], 30_000)).status).toBe(
      "completed",
    );
    const message = await waitFor(
      async () => {
        const messages = (await user.get(`/api/turns/${turn._id}/messages`)).body.messages;
        return messages[0]?.status === "queued_as_turn" ? messages[0] : null;
      },
      10_000,
      "the message to be queued",
    );
    expect(message._id).toBe(messageId);
    const next = await waitForTurn(user, message.turn, ["completed", "failed"], 30_000);
    model.setHandler(undefined);
    expect(next).toMatchObject({
      status: "completed",
      prompt: "Then say goodbye",
      response: "Goodbye.",
    });
    const asked = transcript(requests[1] as ScriptedRequest);
    expect(goalOf(requests[1] as ScriptedRequest)).toBe("Then say goodbye");
    expect(asked.map((said) => said.content)).toEqual(
      expect.arrayContaining(["Say hello", "Hello."]),
    );
  }, 60_000);
});
