// The fleet with real drone CLIs: `register --label` and what `status` says; a turn requiring a
// label runs only on the drone that has it; `start --ephemeral` takes one turn, exits 0 and is
// unregistered, also when its turn is cancelled.
import path from "node:path";
import type { GadgetServer } from "@gadget/server";
import { startTestServer } from "@gadget/server/testing";
import { type ScriptedModel, startScriptedModel } from "@gadget/testkit";
import { type ApiClient, signup, waitFor } from "@gadget/testkit/wire";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  createProjectSession,
  type DroneProcess,
  freshHome,
  runCli,
  startCli,
  waitForDroneOnline,
  waitForTurn,
} from "./helpers.ts";

describe("the fleet with real drones", () => {
  let server: GadgetServer;
  let model: ScriptedModel;
  let user: ApiClient;
  let providerId: string;
  let sessionId: string;
  const started: DroneProcess[] = [];

  beforeAll(async () => {
    // A short grace, so a drone killed mid-turn has its turn interrupted within seconds; the
    // drones heartbeat well within it.
    server = await startTestServer(
      {
        mongoUrl: inject("mongoUrl"),
        redisUrl: inject("redisUrl"),
        droneGraceMs: 4_000,
      },
      `drone_fleet_${process.pid}`,
    );
    model = await startScriptedModel();
    user = await signup(server.url, "fleet");
    ({ providerId, sessionId } = await createProjectSession(user, {
      name: "Fleet",
      modelUrl: model.baseUrl,
      files: { "README.md": "# Fleet\n" },
    }));
  });

  afterAll(async () => {
    for (const drone of started) drone.child.kill("SIGKILL");
    await model?.close();
    await server?.close();
  });

  /** `gadget-drone register` with labels (a reusable token when given), in a fresh home. */
  async function register(name: string, labels: string[], token?: string) {
    const home = await freshHome();
    const config = path.join(home, "drone.json");
    const registration = token ?? (await user.post("/api/drones/registration-tokens")).body.token;
    const registered = await runCli(
      [
        "register",
        "--server",
        server.url,
        "--token",
        registration,
        "--name",
        name,
        "--workspace",
        path.join(home, "workspaces"),
        "--config",
        config,
        ...labels.flatMap((label) => ["--label", label]),
      ],
      home,
    );
    expect(registered.code, registered.stderr).toBe(0);
    return { home, config };
  }

  function start(home: string, config: string, ...flags: string[]) {
    const drone = startCli(["--config", config, ...flags], home, {
      GADGET_DRONE_HEARTBEAT_MS: "300",
    });
    started.push(drone);
    return drone;
  }

  async function post(prompt: string, requires?: string[]): Promise<string> {
    const created = await user.post(`/api/sessions/${sessionId}/turns`, {
      prompt,
      providerId,
      ...(requires ? { requires } : {}),
    });
    expect(created.status).toBe(202);
    return created.body.turn._id as string;
  }

  it("registers labels, shows them in status, and runs a turn only on the drone that has them", async () => {
    const bad = await runCli(
      ["register", "--server", server.url, "--token", "x", "--label", "Not A Label"],
      await freshHome(),
    );
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('--label "Not A Label"');

    const gpu = await register("gpu-box", ["gpu", "region=eu"]);
    const plain = await register("plain-box", []);
    start(gpu.home, gpu.config);
    start(plain.home, plain.config);
    await waitForDroneOnline(user, "gpu-box");
    await waitForDroneOnline(user, "plain-box");
    const status = await runCli(["status", "--config", gpu.config], gpu.home);
    expect(status.stdout).toMatch(/labels: +gpu region=eu os=linux arch=\S+ sandbox=bubblewrap/);
    const listed = (await user.get("/api/drones")).body.drones as Array<{
      _id: string;
      name: string;
      labels: string[];
      outdated: boolean;
    }>;
    const gpuDrone = listed.find((drone) => drone.name === "gpu-box")!;
    expect(gpuDrone.labels).toEqual(
      expect.arrayContaining(["gpu", "region=eu", "os=linux", "sandbox=bubblewrap"]),
    );
    expect(gpuDrone.outdated).toBe(false);

    for (let index = 0; index < 3; index++) {
      model.enqueue({ text: `Answer ${index}.` });
      const turnId = await post(`Needs a GPU ${index}`, ["gpu"]);
      const turn = await waitForTurn(user, turnId, ["completed", "failed"], 60_000);
      expect(turn.status).toBe("completed");
      expect(turn.drone).toBe(gpuDrone._id);
    }
  }, 120_000);

  it("takes exactly one turn with --ephemeral, exits 0 and is unregistered", async () => {
    const token = await user.post("/api/drones/registration-tokens", {
      reusable: true,
      expiresInHours: 1,
      labels: ["pool=burst"],
    });
    const one = await register("burst-1", [], token.body.token);
    // Only the ephemeral drone has `pool=burst`: the turn waits for it.
    model.enqueue({ text: "Done in one." });
    const turnId = await post("One turn for the burst pool", ["pool=burst"]);
    const ephemeral = start(one.home, one.config, "--ephemeral");
    const turn = await waitForTurn(user, turnId, ["completed", "failed"], 60_000);
    expect(turn.status).toBe("completed");
    expect(await ephemeral.exited).toBe(0);
    expect(ephemeral.output()).toContain("ephemeral: the turn has ended; exiting");
    await waitFor(async () =>
      ((await user.get("/api/drones")).body.drones as Array<{ name: string }>).every(
        (drone) => drone.name !== "burst-1",
      ),
    );
    // Unregistered: starting it again is refused in one line.
    const again = start(one.home, one.config);
    expect(await again.exited).toBe(1);
    expect(again.output()).toMatch(/revoked/);

    // A second one from the same reusable token; its turn is cancelled, and it still exits 0.
    const two = await register("burst-2", [], token.body.token);
    model.enqueue({
      toolCalls: [{ name: "run_command", arguments: { command: "sleep 30", timeout_ms: 60_000 } }],
    });
    const long = await post("A long one for the burst pool", ["pool=burst"]);
    const second = start(two.home, two.config, "--ephemeral");
    await waitForTurn(user, long, ["processing"], 60_000);
    await waitFor(
      async () =>
        (await user.get(`/api/turns/${long}/events`)).body.events.some(
          (event: { type: string }) => event.type === "tool_start",
        ),
      60_000,
      "the long command to start",
    );
    expect((await user.post(`/api/turns/${long}/cancel`)).status).toBe(202);
    expect((await waitForTurn(user, long, ["cancelled"], 30_000)).status).toBe("cancelled");
    expect(await second.exited).toBe(0);
  }, 120_000);

  it("unregisters an ephemeral drone killed mid-turn once its turn is interrupted", async () => {
    const token = await user.post("/api/drones/registration-tokens", {
      reusable: true,
      expiresInHours: 1,
      labels: ["pool=fragile"],
    });
    const three = await register("fragile-1", [], token.body.token);
    model.enqueue({
      toolCalls: [{ name: "run_command", arguments: { command: "sleep 30", timeout_ms: 60_000 } }],
    });
    const turnId = await post("A turn whose drone dies", ["pool=fragile"]);
    const doomed = start(three.home, three.config, "--ephemeral");
    // A CLI drone's start, its clone and the sandbox's first command: 20 s and more on a busy machine.
    await waitFor(
      async () =>
        (await user.get(`/api/turns/${turnId}/events`)).body.events.some(
          (event: { type: string }) => event.type === "tool_start",
        ),
      60_000,
      "the doomed drone's command to start",
    );
    doomed.child.kill("SIGKILL");
    expect((await waitForTurn(user, turnId, ["interrupted"], 30_000)).status).toBe("interrupted");
    await waitFor(async () =>
      ((await user.get("/api/drones")).body.drones as Array<{ name: string }>).every(
        (drone) => drone.name !== "fragile-1",
      ),
    );
  }, 120_000);
});
