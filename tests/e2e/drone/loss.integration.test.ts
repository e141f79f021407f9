// A drone's connection drops mid-turn (a real CLI drone behind a TCP link the test cuts): the turn
// says so at once (`drone_lost`, `waiting: drone_offline` with its deadline), and when the link
// is back the drone takes its turn back (`drone_back`) and finishes it, its events gapless.
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import type { GadgetServer } from "@gadget/server";
import { startTestServer } from "@gadget/server/testing";
import {
  processesWithArgument,
  type ScriptedModel,
  startScriptedModel,
  waitingCommand,
} from "@gadget/testkit";
import { type NetworkLink, startNetworkLink } from "@gadget/testkit/browser";
import { type ApiClient, signup, waitFor } from "@gadget/testkit/wire";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  createProjectSession,
  type DroneProcess,
  freshHome,
  registerWithCli,
  settledEvents,
  startCli,
  turnEvents,
  waitForDroneOnline,
  waitForTurn,
} from "./helpers.ts";

describe("a drone's lost connection", () => {
  let server: GadgetServer;
  let model: ScriptedModel;
  let user: ApiClient;
  let home: string;
  let link: NetworkLink;
  const processes: DroneProcess[] = [];

  beforeAll(async () => {
    server = await startTestServer(
      { mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl"), droneGraceMs: 20_000 },
      `drone_loss_${process.pid}`,
    );
    model = await startScriptedModel();
    user = await signup(server.url, "loss");
    home = await freshHome();
    link = await startNetworkLink(server.url);
  });

  afterAll(async () => {
    for (const drone of processes) drone.child.kill("SIGKILL");
    await link?.close();
    await model?.close();
    await server?.close();
  });

  it("shows drone_lost and drone_offline at once, then drone_back, and the turn completes gapless", async () => {
    const config = path.join(home, "wifi.json");
    const registered = await registerWithCli(user, server.url, {
      name: "wifi",
      workspace: path.join(home, "wifi"),
      config,
      home,
    });
    expect(registered.code, registered.stderr).toBe(0);
    // The drone reaches the server through the link only.
    const settings = JSON.parse(await readFile(config, "utf8"));
    await writeFile(config, JSON.stringify({ ...settings, server: link.url }), { mode: 0o600 });
    const drone = startCli(["--config", config], home, { GADGET_DRONE_HEARTBEAT_MS: "500" });
    processes.push(drone);
    await waitForDroneOnline(user, "wifi");

    const fixture = await createProjectSession(user, { name: "Lossy", modelUrl: model.baseUrl });
    const word = `gadget-wait-loss-${process.pid}`;
    model.enqueue(
      {
        toolCalls: [
          {
            name: "run_command",
            arguments: { command: `${waitingCommand("loss.started", 4_000, word)} && echo after` },
          },
        ],
      },
      { text: "Done after the outage." },
    );
    const created = await user.post(`/api/sessions/${fixture.sessionId}/turns`, {
      prompt: "Run the job",
      providerId: fixture.providerId,
    });
    const turnId = created.body.turn._id as string;
    await waitFor(() => processesWithArgument(word).length > 0, 20_000, "the command to start");

    link.setDown(true);
    const lost = await waitFor(
      async () => {
        const turn = (await user.get(`/api/turns/${turnId}`)).body.turn;
        return turn.waiting?.reason === "drone_offline" ? turn : null;
      },
      10_000,
      "the turn to wait for its drone",
    );
    expect(lost.status).toBe("processing");
    expect(new Date(lost.waiting.until).getTime()).toBeGreaterThan(
      new Date(lost.waiting.since).getTime(),
    );
    const whileLost = await turnEvents(user, turnId);
    expect(whileLost.at(-1)).toMatchObject({
      type: "drone_lost",
      data: { graceMs: 20_000, droneName: "wifi" },
    });
    // The drone goes on meanwhile: the command ends while it is offline.
    await waitFor(
      () => processesWithArgument(word).length === 0,
      15_000,
      "the command to end offline",
    );

    link.setDown(false);
    const turn = await waitForTurn(user, turnId, ["completed", "failed", "interrupted"], 30_000);
    expect(turn.status).toBe("completed");
    expect(turn.waiting ?? null).toBeNull();
    const events = await settledEvents(user, turnId);
    const seqs = events.map((event) => event.seq);
    expect(seqs).toEqual(seqs.map((_, index) => index + 1));
    const types = events.map((event) => event.type);
    const lostAt = types.indexOf("drone_lost");
    const backAt = types.indexOf("drone_back");
    expect(lostAt).toBeGreaterThan(0);
    expect(backAt).toBeGreaterThan(lostAt);
    // What the drone did while offline arrived after it came back, once.
    const results = events.filter((event) => event.type === "tool_result");
    expect(results).toHaveLength(1);
    expect(events.indexOf(results[0])).toBeGreaterThan(backAt);
    expect(events.filter((event) => event.type === "done")).toHaveLength(1);
    expect(turn.response).toContain("Done after the outage");
  }, 60_000);
});
