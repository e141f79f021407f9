// Stopping a drone (the real CLI) with two turns running: the first SIGTERM makes it `draining` —
// the drones list says so, a new turn waits for another drone — and both turns finish before it
// exits 0; a second SIGTERM ends what still runs as `drone_shutdown`, in words that say so.
import { spawn } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
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
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { repoDir } from "../paths.ts";
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

const finalStatuses = ["completed", "failed", "cancelled", "interrupted"];

describe("draining a drone", () => {
  let server: GadgetServer;
  let model: ScriptedModel;
  let user: ApiClient;
  let home: string;
  const processes: DroneProcess[] = [];

  beforeAll(async () => {
    server = await startTestServer(
      { mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl") },
      `drone_drain_${process.pid}`,
    );
    model = await startScriptedModel();
    user = await signup(server.url, "drain");
    home = await freshHome();
  });

  afterAll(async () => {
    for (const drone of processes) drone.child.kill("SIGKILL");
    await model?.close();
    await server?.close();
  });

  async function statusOf(name: string): Promise<string | undefined> {
    const drones = (await user.get("/api/drones")).body.drones as Array<{
      name: string;
      status: string;
    }>;
    return drones.find((drone) => drone.name === name)?.status;
  }

  it("first SIGTERM: draining, no new turn, both running turns finish, exit 0; second SIGTERM: drone_shutdown", async () => {
    const config = path.join(home, "stopping.json");
    const registered = await registerWithCli(user, server.url, {
      name: "stopping",
      workspace: path.join(home, "stopping"),
      config,
      home,
    });
    expect(registered.code, registered.stderr).toBe(0);
    let drone = startCli(["--config", config], home, { GADGET_DRONE_HEARTBEAT_MS: "500" });
    processes.push(drone);
    await waitForDroneOnline(user, "stopping");

    // Two turns in two projects, each in a 3 s command; then each answers.
    const first = await createProjectSession(user, { name: "Drain one", modelUrl: model.baseUrl });
    const second = await createProjectSession(user, { name: "Drain two", modelUrl: model.baseUrl });
    const word = `gadget-wait-drain-${process.pid}`;
    const command = (marker: string) => ({
      toolCalls: [
        { name: "run_command", arguments: { command: waitingCommand(marker, 3_000, word) } },
      ],
    });
    model.enqueue(command("one.started"), command("two.started"));
    const post = async (fixture: typeof first, prompt: string) =>
      (
        await user.post(`/api/sessions/${fixture.sessionId}/turns`, {
          prompt,
          providerId: fixture.providerId,
        })
      ).body.turn._id as string;
    const one = await post(first, "First job");
    const two = await post(second, "Second job");
    await waitFor(() => processesWithArgument(word).length >= 2, 20_000, "both commands to start");
    model.enqueue({ text: "First done." }, { text: "Second done." });

    drone.child.kill("SIGTERM");
    await waitFor(
      async () => (await statusOf("stopping")) === "draining",
      10_000,
      "the drone to show draining",
    );
    // A turn asked for meanwhile is not sent to the draining drone.
    const later = await post(first, "Later job");
    expect(await drone.exited).toBe(0);
    for (const turnId of [one, two]) {
      expect((await waitForTurn(user, turnId, finalStatuses)).status).toBe("completed");
    }
    const waiting = (await user.get(`/api/turns/${later}`)).body.turn;
    expect(waiting.status).toBe("queued");
    expect(waiting.drone).toBeNull();
    expect(await statusOf("stopping")).toBe("offline");

    // Started again, it takes the waiting turn; two SIGTERMs end it as the drone's shutdown.
    model.enqueue(command("three.started"));
    drone = startCli(["--config", config], home, { GADGET_DRONE_HEARTBEAT_MS: "500" });
    processes.push(drone);
    await waitFor(() => processesWithArgument(word).length > 0, 20_000, "the later command");
    drone.child.kill("SIGTERM");
    await new Promise((resolve) => setTimeout(resolve, 300));
    drone.child.kill("SIGTERM");
    expect(await drone.exited).toBe(0);
    const stopped = await waitForTurn(user, later, finalStatuses);
    expect(stopped).toMatchObject({ status: "interrupted", exitReason: "drone_shutdown" });
    expect(stopped.error?.message, "an interrupted turn says why").toMatch(/shut down/);
    const events = await turnEvents(user, later);
    expect(JSON.stringify(events)).toMatch(/drone was shut down/);
    expect(JSON.stringify(events)).not.toMatch(/by the user/);
    // A drone start, two turns and two stops: more than the default 30 s on a busy machine.
  }, 150_000);

  it("Ctrl-C of `pnpm gadget-drone start` is a clean stop: exit 0, no ELIFECYCLE", async () => {
    // A drone whose server is down: it keeps trying until the Ctrl-C.
    const dir = await freshHome();
    const config = path.join(dir, "drone.json");
    await mkdir(path.join(dir, "workspaces"));
    const settings = {
      server: "http://127.0.0.1:9",
      droneId: "0123456789abcdef01234567",
      credential: "unused",
      name: "ctrl-c",
      workspace: path.join(dir, "workspaces"),
      capacity: 1,
      registeredAt: new Date().toISOString(),
    };
    await writeFile(config, JSON.stringify(settings), { mode: 0o600 });
    // Its own process group, as a terminal's foreground job: Ctrl-C reaches pnpm and the drone.
    const child = spawn("pnpm", ["gadget-drone", "start", "--config", config], {
      cwd: repoDir,
      detached: true,
      env: { ...process.env, HOME: dir },
    });
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr.on("data", (chunk) => {
      output += chunk;
    });
    const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
    await waitFor(() => output.includes("connecting to"), 20_000, "the drone to start");
    // The drone is pnpm's child (`exec node …`).
    const [dronePid] = (await readFile(`/proc/${child.pid}/task/${child.pid}/children`, "utf8"))
      .trim()
      .split(/\s+/)
      .map(Number);
    process.kill(-(child.pid as number), "SIGINT");
    // pnpm passes its Ctrl-C on to the drone a moment later (and a person may press it again):
    // signals keep coming until it exits, and none may turn its clean stop into a death by SIGINT.
    const again = setInterval(() => {
      try {
        process.kill(dronePid as number, "SIGINT");
      } catch {
        // exited
      }
    }, 3);
    const code = await exited.finally(() => clearInterval(again));
    expect(code, output).toBe(0);
    expect(output).toContain("stopped");
    expect(output).not.toContain("ELIFECYCLE");
  });
});
