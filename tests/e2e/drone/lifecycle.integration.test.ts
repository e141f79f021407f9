// End to end through the CLI: a drone killed mid-turn leaves the turn `interrupted`; restarted and
// resumed, the turn completes with every event once. A revoked credential gets a clear error.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import type { GadgetServer } from "@gadget/server";
import { startTestServer } from "@gadget/server/testing";
import {
  processesWithArgument,
  type ScriptedModel,
  startScriptedModel,
  waitingCommand,
} from "@gadget/testkit";
import { type ApiClient, signup, waitFor } from "@gadget/testkit/wire";
import { worktreeDirectory } from "gadget-drone/testing";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  createProjectSession,
  type DroneProcess,
  freshHome,
  registerWithCli,
  runCli,
  settledEvents,
  startCli,
  turnEvents,
  waitForDroneOnline,
  waitForTurn,
} from "./helpers.ts";

describe("drone lifecycle end to end", () => {
  let server: GadgetServer;
  let model: ScriptedModel;
  let user: ApiClient;
  let home: string;
  const processes: DroneProcess[] = [];

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
    await model?.close();
    await server?.close();
  });

  async function register(config: string, name: string) {
    const result = await registerWithCli(user, server.url, {
      name,
      workspace: path.join(home, name),
      config,
      home,
    });
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
    await register(config, "killable");
    let drone = start(config);
    await waitForDroneOnline(user, "killable");

    const fixture = await createProjectSession(user, {
      name: "Resumable",
      modelUrl: model.baseUrl,
    });
    // The manual Resume is what this test is about: the restarted drone must not take it back first.
    const patched = await user.patch(`/api/sessions/${fixture.sessionId}`, { autoResume: "off" });
    expect(patched.body.session.autoResume).toBe("off");
    const word = `gadget-wait-killed-${process.pid}`;
    model.enqueue({
      toolCalls: [
        {
          name: "run_command",
          arguments: {
            command: waitingCommand("long.started", 60_000, word),
          },
        },
      ],
    });
    const created = await user.post(`/api/sessions/${fixture.sessionId}/turns`, {
      prompt: "Run the long job, then report",
      providerId: fixture.providerId,
    });
    const turnId = created.body.turn._id;
    // Running inside its sandbox (it wrote its marker), not merely being spawned.
    const worktree = worktreeDirectory(
      path.join(home, "killable"),
      fixture.projectSlug,
      fixture.sessionId,
    );
    const started = path.join(worktree, "long.started");
    await waitFor(() => existsSync(started), 20_000, "the long command to start");
    expect(processesWithArgument(word).length).toBeGreaterThan(0);

    drone.child.kill("SIGKILL");
    await drone.exited;
    // The sandbox dies with the drone (--die-with-parent, pid namespace): nothing is left running.
    await waitFor(
      () => processesWithArgument(word).length === 0,
      5_000,
      "the command to end with the drone",
    );
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
    model.enqueue(
      (request) => {
        const sawCall = JSON.stringify(request.body.messages).includes("run_command");
        return sawCall
          ? {
              toolCalls: [
                { name: "write_file", arguments: { path: "resumed.txt", content: "after\n" } },
              ],
            }
          : { text: "I lost my memory." };
      },
      { text: "Resumed: the long job was interrupted, nothing else to do." },
    );
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
    // The resumed turn worked in the same worktree, and its branch holds the whole turn's work.
    expect(await readFile(path.join(worktree, "resumed.txt"), "utf8")).toBe("after\n");
    expect(existsSync(started)).toBe(true);
    const committed = execFileSync("git", ["show", "--name-only", "--format=", "HEAD"], {
      cwd: worktree,
      encoding: "utf8",
    });
    expect(committed.trim().split("\n").sort()).toEqual(["long.started", "resumed.txt"]);
    drone.child.kill("SIGTERM");
    const code = await drone.exited;
    expect(code, drone.output()).toBe(0);
  }, 60_000);

  it("SIGTERM once lets the running turn finish; twice ends it as drone_shutdown", async () => {
    const config = path.join(home, "signals.json");
    await register(config, "signals");
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
    const shortWord = `gadget-wait-short-${process.pid}`;
    model.enqueue(
      {
        toolCalls: [
          {
            name: "run_command",
            arguments: { command: waitingCommand("short.started", 1500, shortWord) },
          },
        ],
      },
      { text: "Finished the short job." },
    );
    const finishing = await prompt("Short job");
    await waitFor(
      () => processesWithArgument(shortWord).length > 0,
      15_000,
      "the short command to start",
    );
    drone.child.kill("SIGTERM");
    expect(await drone.exited).toBe(0);
    expect(
      (await waitForTurn(user, finishing, ["completed", "cancelled", "failed", "interrupted"]))
        .status,
    ).toBe("completed");

    // Twice: the turn is cancelled and the drone exits 0 within a few seconds.
    drone = start(config);
    await waitForDroneOnline(user, "signals");
    const longWord = `gadget-wait-long-${process.pid}`;
    model.enqueue({
      toolCalls: [
        {
          name: "run_command",
          arguments: { command: waitingCommand("long2.started", 60_000, longWord) },
        },
      ],
    });
    const cancelling = await prompt("Long job");
    await waitFor(
      () => processesWithArgument(longWord).length > 0,
      15_000,
      "the long command to start",
    );
    drone.child.kill("SIGTERM");
    await new Promise((resolve) => setTimeout(resolve, 300));
    drone.child.kill("SIGTERM");
    const exitedAt = Date.now();
    expect(await drone.exited).toBe(0);
    expect(Date.now() - exitedAt, drone.output()).toBeLessThan(5_000);
    // Stopped by the drone's shutdown, not by its user: it can be resumed.
    const stopped = await waitForTurn(user, cancelling, [
      "cancelled",
      "completed",
      "failed",
      "interrupted",
    ]);
    expect(stopped).toMatchObject({ status: "interrupted", exitReason: "drone_shutdown" });
    expect(stopped.error?.message, "an interrupted turn says why").toMatch(/shut down/);
    // Two drone starts, two turns and their commands: more than the default 30 s on a busy machine.
  }, 120_000);

  it("unregisters: the server revokes the credential and the local config is gone", async () => {
    const config = path.join(home, "leaving.json");
    await register(config, "leaving");
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
    await register(config, "revokable");
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
