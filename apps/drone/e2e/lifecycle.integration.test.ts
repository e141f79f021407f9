// End to end through the CLI: a drone killed mid-turn leaves the turn `interrupted`; restarted and
// resumed, the turn completes with every event once. A revoked credential gets a clear error.
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import type { GadgetServer } from "@gadget/server";
import { type ApiClient, signup, startTestServer, waitFor } from "@gadget/server/testing";
import { type ScriptedModel, startScriptedModel } from "@gadget/testkit";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  createProjectSession,
  type DroneProcess,
  freshHome,
  runCli,
  settledEvents,
  startCli,
  turnEvents,
  waitForDroneOnline,
  waitForTurn,
  waitingCommand,
} from "./helpers.ts";

describe("drone lifecycle end to end", () => {
  let server: GadgetServer;
  let model: ScriptedModel;
  let user: ApiClient;
  let home: string;
  const processes: DroneProcess[] = [];
  const strayPids: number[] = [];

  beforeAll(async () => {
    server = await startTestServer(
      { mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl"), droneGraceMs: 1_500 },
      `drone_lifecycle_${process.pid}`,
    );
    model = await startScriptedModel();
    user = await signup(server.url, "lifecycle");
    home = await freshHome();
  });

  afterAll(async () => {
    for (const drone of processes) drone.child.kill("SIGKILL");
    for (const pid of strayPids) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    await model?.close();
    await server?.close();
  });

  async function registerWithCli(config: string, name: string) {
    const token = await user.post("/api/drones/registration-tokens");
    const result = await runCli(
      [
        "register",
        "--server",
        server.url,
        "--token",
        token.body.token,
        "--name",
        name,
        "--workspace",
        path.join(home, name),
        "--config",
        config,
      ],
      home,
    );
    expect(result.code, result.stderr).toBe(0);
  }

  function start(config: string) {
    // Heartbeats well inside the server's 1.5 s grace period.
    process.env.GADGET_DRONE_HEARTBEAT_MS = "200";
    const drone = startCli(["--config", config], home);
    delete process.env.GADGET_DRONE_HEARTBEAT_MS;
    processes.push(drone);
    return drone;
  }

  it("SIGKILL mid-turn → interrupted; restart and resume → completed, with no event lost or duplicated", async () => {
    const config = path.join(home, "killed.json");
    await registerWithCli(config, "killable");
    let drone = start(config);
    await waitForDroneOnline(user, "killable");

    const fixture = await createProjectSession(user, {
      name: "Resumable",
      modelUrl: model.baseUrl,
    });
    const marker = path.join(home, "long.pid");
    model.enqueue({
      toolCalls: [
        {
          name: "run_command",
          arguments: {
            command: waitingCommand(marker, 60_000),
          },
        },
      ],
    });
    const created = await user.post(`/api/sessions/${fixture.sessionId}/turns`, {
      prompt: "Run the long job, then report",
      providerId: fixture.providerId,
    });
    const turnId = created.body.turn._id;
    await waitFor(() => existsSync(marker), 20_000, "the long command to start");
    strayPids.push(Number(await readFile(marker, "utf8")));

    drone.child.kill("SIGKILL");
    await drone.exited;
    const interrupted = await waitForTurn(
      user,
      turnId,
      ["interrupted", "failed", "completed"],
      15_000,
    );
    expect(interrupted.status).toBe("interrupted");
    const before = await turnEvents(user, turnId);

    drone = start(config);
    await waitForDroneOnline(user, "killable");
    model.enqueue((request) => {
      const sawCall = JSON.stringify(request.body.messages).includes("run_command");
      return {
        text: sawCall
          ? "Resumed: the long job was interrupted, nothing else to do."
          : "I lost my memory.",
      };
    });
    const resumed = await user.post(`/api/turns/${turnId}/resume`);
    expect(resumed.status).toBe(202);

    const turn = await waitForTurn(user, turnId, ["completed", "failed"], 30_000);
    expect(turn.status).toBe("completed");
    expect(turn.response).toContain("Resumed");
    const events = await settledEvents(user, turnId);
    const seqs = events.map((event) => event.seq);
    expect(seqs).toEqual(seqs.map((_, index) => index + 1));
    // What was stored before the kill is still there, unchanged, at the start of the stream.
    expect(events.slice(0, before.length)).toEqual(before);
    expect(events.at(-1)).toMatchObject({ type: "done", data: { reason: "completed" } });
    drone.child.kill("SIGTERM");
    const code = await drone.exited;
    expect(code, drone.output()).toBe(0);
  });

  it("SIGTERM once lets the running turn finish; twice cancels it", async () => {
    const config = path.join(home, "signals.json");
    await registerWithCli(config, "signals");
    const fixture = await createProjectSession(user, { name: "Signals", modelUrl: model.baseUrl });
    const prompt = async (text: string) =>
      (
        await user.post(`/api/sessions/${fixture.sessionId}/turns`, {
          prompt: text,
          providerId: fixture.providerId,
          droneId: (
            await user.get("/api/drones")
          ).body.drones.find((entry: { name: string }) => entry.name === "signals")._id,
        })
      ).body.turn._id as string;

    // Once: the turn (a 1.5 s command) completes, then the drone exits 0.
    let drone = start(config);
    await waitForDroneOnline(user, "signals");
    const shortMarker = path.join(home, "short.pid");
    model.enqueue(
      {
        toolCalls: [
          {
            name: "run_command",
            arguments: { command: waitingCommand(shortMarker, 1500) },
          },
        ],
      },
      { text: "Finished the short job." },
    );
    const finishing = await prompt("Short job");
    await waitFor(() => existsSync(shortMarker), 15_000, "the short command to start");
    drone.child.kill("SIGTERM");
    expect(await drone.exited).toBe(0);
    expect(
      (await waitForTurn(user, finishing, ["completed", "cancelled", "failed", "interrupted"]))
        .status,
    ).toBe("completed");

    // Twice: the turn is cancelled and the drone exits 0 within a few seconds.
    drone = start(config);
    await waitForDroneOnline(user, "signals");
    const longMarker = path.join(home, "long2.pid");
    model.enqueue({
      toolCalls: [
        {
          name: "run_command",
          arguments: { command: waitingCommand(longMarker, 60_000) },
        },
      ],
    });
    const cancelling = await prompt("Long job");
    await waitFor(() => existsSync(longMarker), 15_000, "the long command to start");
    strayPids.push(Number(await readFile(longMarker, "utf8")));
    drone.child.kill("SIGTERM");
    await new Promise((resolve) => setTimeout(resolve, 300));
    drone.child.kill("SIGTERM");
    const exitedAt = Date.now();
    expect(await drone.exited).toBe(0);
    expect(Date.now() - exitedAt, drone.output()).toBeLessThan(5_000);
    expect(
      (await waitForTurn(user, cancelling, ["cancelled", "completed", "failed", "interrupted"]))
        .status,
    ).toBe("cancelled");
  });

  it("unregisters: the server revokes the credential and the local config is gone", async () => {
    const config = path.join(home, "leaving.json");
    await registerWithCli(config, "leaving");
    const result = await runCli(["unregister", "--config", config], home);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("the server revoked its credential");
    expect(existsSync(config)).toBe(false);
    const drones = await user.get("/api/drones");
    expect(drones.body.drones.map((drone: { name: string }) => drone.name)).not.toContain(
      "leaving",
    );
    // Nothing is left to unregister.
    const again = await runCli(["unregister", "--config", config], home);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/No drone config/);
  });

  it("refuses to start with a revoked credential, in one line", async () => {
    const config = path.join(home, "revoked.json");
    await registerWithCli(config, "revokable");
    const drones = await user.get("/api/drones");
    const revokable = drones.body.drones.find(
      (entry: { name: string }) => entry.name === "revokable",
    );
    expect((await user.delete(`/api/drones/${revokable._id}`)).status).toBe(204);

    const drone = start(config);
    expect(await drone.exited).toBe(1);
    const lastLine = drone.output().trim().split("\n").at(-1) ?? "";
    expect(lastLine).toMatch(/revoked/i);
  });
});
