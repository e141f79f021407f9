// The database down mid-turn with two servers (decision 0046): a real gadget-drone streams to
// server A while the user's browser is connected to server B; a private FerretDB is stopped
// mid-turn and started again. The browser on B hears the turn wait on the database and stop
// waiting (through the Redis adapter, which stays up), and the turn completes whole.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { TurnWaiting } from "@gadget/protocol";
import type { GadgetServer } from "@gadget/server";
import { startTestServer } from "@gadget/server/testing";
import {
  databaseUrl,
  findRepoRoot,
  type RestartableService,
  startRestartableMongo,
} from "@gadget/services";
import { type ScriptedModel, startScriptedModel } from "@gadget/testkit";
import { type ApiClient, IdeClient, signup, waitFor } from "@gadget/testkit/wire";
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

let base: string;
let mongo: RestartableService;
let serverA: GadgetServer;
let serverB: GadgetServer;
let model: ScriptedModel;
let user: ApiClient;
let drone: DroneProcess;
let browser: IdeClient;

beforeAll(async () => {
  base = await mkdtemp(path.join(tmpdir(), "gadget-outage-servers-"));
  mongo = await startRestartableMongo(findRepoRoot(), path.join(base, "mongo"));
  const options = {
    mongoUrl: databaseUrl(mongo.url, "outage_servers"),
    redisUrl: inject("redisUrl"),
    droneGraceMs: 60_000,
    sweepIntervalMs: 500,
  };
  // One database and Redis prefix, two server processes' worth of servers.
  const name = `outage_servers_${process.pid}`;
  serverA = await startTestServer(options, name);
  serverB = await startTestServer(options, name);
  model = await startScriptedModel();
  user = await signup(serverA.url, "outage-servers");
  const home = await freshHome();
  const config = path.join(home, "drone.json");
  const registered = await registerWithCli(user, serverA.url, {
    name: "outage-servers",
    workspace: path.join(home, "workspace"),
    config,
    home,
  });
  expect(registered.code, registered.stderr).toBe(0);
  drone = startCli(["--config", config], home, { GADGET_DRONE_HEARTBEAT_MS: "1000" });
  await waitForDroneOnline(user, "outage-servers", 30_000);
  browser = await IdeClient.connect(serverB.url, user.token ?? "");
}, 180_000);

afterAll(async () => {
  browser?.close();
  drone?.child.kill("SIGKILL");
  await model?.close();
  await serverB?.close().catch(() => undefined);
  await serverA?.close().catch(() => undefined);
  await mongo?.stop();
  if (base) await rm(base, { recursive: true, force: true });
});

describe("the database down mid-turn, the browser on another server", () => {
  it("shows the turn waiting on the database, then streaming again, and the turn completes", async () => {
    const heard: Array<{ turnId: string; waiting: TurnWaiting | null }> = [];
    browser.socket.on("turn_waiting", (message) => heard.push(message));
    const fixture = await createProjectSession(user, { name: "Outage", modelUrl: model.baseUrl });
    const steps = 6;
    for (let step = 1; step <= steps; step++) {
      model.enqueue({
        toolCalls: [
          {
            name: "run_command",
            arguments: { command: `node -e "setTimeout(() => console.log('step ${step}'), 400)"` },
          },
        ],
      });
    }
    model.enqueue({ text: "Done despite the database." });
    const created = await user.post(`/api/sessions/${fixture.sessionId}/turns`, {
      prompt: "Work through the steps",
      providerId: fixture.providerId,
    });
    const turnId = created.body.turn._id as string;
    await waitFor(
      async () =>
        (await turnEvents(user, turnId)).some(
          (event) => event.type === "status" && event.data.pass === 2,
        ),
      30_000,
      "pass 2",
    );

    await mongo.kill();
    // Started again however the wait ends: a server stopping waits for the turn's state to be
    // written, so the database must be back for afterAll to stop them.
    const waiting = await waitFor(
      () => heard.find((message) => message.turnId === turnId && message.waiting),
      30_000,
      "the browser on server B to hear the turn wait on the database",
    ).finally(() => mongo.start());
    expect(waiting?.waiting?.reason).toBe("database");
    await waitFor(
      () => heard.some((message) => message.turnId === turnId && message.waiting === null),
      60_000,
      "the browser on server B to hear the wait is over",
    );

    const turn = await waitForTurn(user, turnId, ["completed", "failed", "interrupted"], 120_000);
    expect(turn.status, JSON.stringify(turn.error)).toBe("completed");
    expect(turn.response).toBe("Done despite the database.");
    const events = await turnEvents(user, turnId);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    expect(events.filter((event) => event.type === "done")).toHaveLength(1);
  }, 240_000);
});
