// Turns that carry on by themselves (real CLI drones, SIGKILL): a drone restarted within the
// grace continues its turn without any resume call, the model asked again only for the pass that
// was cut and the cut pass's text dropped (a `retry` marker before it streams again), also when it
// comes back under the same PID (PID 1 of its own namespace, as in a container); so does one
// that comes back after the grace, its journal naming the turn, and what that journal held but
// never sent is superseded by the rerun; so does one whose process lived while its network was
// cut past the grace (its live run dropped); a drone that never returns leaves its turn to another
// drone when the session says `any-drone`.
import { existsSync } from "node:fs";
import { appendFile, readFile } from "node:fs/promises";
import net, { type AddressInfo } from "node:net";
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

const finalStatuses = ["completed", "failed", "cancelled", "interrupted"];

/** A TCP relay to the server whose link can be cut (every connection dropped, new ones refused). */
async function cuttableLink(target: string) {
  const { hostname, port } = new URL(target);
  let open = true;
  const sockets = new Set<net.Socket>();
  const relay = net.createServer((client) => {
    if (!open) {
      client.destroy();
      return;
    }
    const upstream = net.connect(Number(port), hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
      socket.on("error", () => undefined);
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(relay.address() as AddressInfo).port}`,
    cut() {
      open = false;
      for (const socket of sockets) socket.destroy();
    },
    mend() {
      open = true;
    },
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => relay.close(() => resolve()));
    },
  };
}

describe("turns that carry on by themselves", () => {
  let server: GadgetServer;
  let model: ScriptedModel;
  let user: ApiClient;
  let home: string;
  const processes: DroneProcess[] = [];

  beforeAll(async () => {
    server = await startTestServer(
      { mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl"), droneGraceMs: 15_000 },
      `drone_carry_on_${process.pid}`,
    );
    model = await startScriptedModel();
    user = await signup(server.url, "carry-on");
    home = await freshHome();
  });

  afterAll(async () => {
    for (const drone of processes) drone.child.kill("SIGKILL");
    await model?.close();
    await server?.close();
  });

  async function register(name: string, serverUrl = server.url): Promise<string> {
    const config = path.join(home, `${name}.json`);
    const registered = await registerWithCli(user, serverUrl, {
      name,
      workspace: path.join(home, name),
      config,
      home,
    });
    expect(registered.code, registered.stderr).toBe(0);
    return config;
  }

  function start(config: string, wrapper: string[] = []): DroneProcess {
    const drone = startCli(
      ["--config", config],
      home,
      { GADGET_DRONE_HEARTBEAT_MS: "500" },
      wrapper,
    );
    processes.push(drone);
    return drone;
  }

  /** A turn that writes a file (pass 1), then narrates and runs a long command (pass 2). */
  async function longTurn(sessionId: string, providerId: string, word: string) {
    model.enqueue(
      { toolCalls: [{ name: "write_file", arguments: { path: "one.txt", content: "1\n" } }] },
      {
        text: "Running the long job now.",
        toolCalls: [
          {
            name: "run_command",
            arguments: { command: waitingCommand("long.started", 60_000, word) },
          },
        ],
      },
    );
    const created = await user.post(`/api/sessions/${sessionId}/turns`, {
      prompt: "Write one file, then run the long job",
      providerId,
    });
    const turnId = created.body.turn._id as string;
    await waitFor(() => processesWithArgument(word).length > 0, 20_000, "the long command");
    return turnId;
  }

  it("SIGKILL, then restart: the turn completes without a resume call, only the cut pass asked again", async () => {
    const config = await register("phoenix");
    let drone = start(config);
    await waitForDroneOnline(user, "phoenix");
    const fixture = await createProjectSession(user, { name: "Phoenix", modelUrl: model.baseUrl });
    const word = `gadget-wait-phoenix-${process.pid}`;
    const before = model.chatRequests.length;
    const turnId = await longTurn(fixture.sessionId, fixture.providerId, word);

    drone.child.kill("SIGKILL");
    await drone.exited;
    await waitFor(
      async () =>
        (await user.get(`/api/turns/${turnId}`)).body.turn.waiting?.reason === "drone_offline",
      10_000,
      "the turn to wait for its drone",
    );
    model.enqueue({ text: "Finished after the restart." });
    drone = start(config);
    const turn = await waitForTurn(user, turnId, finalStatuses, 40_000);
    expect(turn.status).toBe("completed");
    expect(turn.response).toContain("Finished after the restart");
    // Pass 1 once, the cut pass 2 twice: three model calls, the last one from the checkpoint.
    const calls = model.chatRequests.slice(before);
    expect(calls).toHaveLength(3);
    const resumedWith = JSON.stringify(calls[2]?.messages);
    expect(resumedWith).toContain("write_file");
    expect(resumedWith).not.toContain("Running the long job now");

    const events = await settledEvents(user, turnId);
    const seqs = events.map((event) => event.seq);
    expect(seqs).toEqual(seqs.map((_, index) => index + 1));
    const types = events.map((event) => event.type);
    const lost = types.indexOf("drone_lost");
    const retry = events.findIndex(
      (event, index) => index > lost && event.type === "status" && event.data.phase === "retry",
    );
    expect(lost).toBeGreaterThan(0);
    expect(retry).toBeGreaterThan(lost);
    // Nothing streams between the loss and the marker that drops the cut pass's text.
    expect(types.slice(lost, retry)).not.toContain("token");
    expect(types.slice(retry)).toContain("dispatched");
    expect(events.filter((event) => event.type === "done")).toHaveLength(1);
    drone.child.kill("SIGTERM");
    expect(await drone.exited).toBe(0);
  }, 60_000);

  it("SIGKILL, then restart with the same PID (as in its container): the turn takes its worktree back", async () => {
    // PID 1 of a namespace of its own each time, as tini's first child is in a restarted
    // container: the lock the killed drone left names the PID the new one has.
    const ownPidNamespace = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"];
    const config = await register("container");
    let drone = start(config, ownPidNamespace);
    await waitForDroneOnline(user, "container");
    const fixture = await createProjectSession(user, {
      name: "Container",
      modelUrl: model.baseUrl,
    });
    const word = `gadget-wait-container-${process.pid}`;
    const turnId = await longTurn(fixture.sessionId, fixture.providerId, word);
    const locks = path.join(home, "container", ".locks");
    const lockFile = path.join(locks, fixture.projectSlug, `${fixture.sessionId}.lock`);
    expect(JSON.parse(await readFile(lockFile, "utf8"))).toMatchObject({ pid: 1, turnId });

    drone.child.kill("SIGKILL");
    await drone.exited;
    await waitFor(() => processesWithArgument(word).length === 0, 10_000, "the long command gone");
    model.enqueue({ text: "Finished in the restarted container." });
    drone = start(config, ownPidNamespace);
    const turn = await waitForTurn(user, turnId, finalStatuses, 40_000);
    expect(turn.status).toBe("completed");
    expect(turn.response).toContain("Finished in the restarted container");
    // `unshare --kill-child` takes the namespace down with it.
    drone.child.kill("SIGKILL");
    await drone.exited;
  }, 60_000);

  it("SIGKILL, back after the grace: the turn carries on by itself, its unsent journal superseded", async () => {
    const config = await register("boomerang");
    let drone = start(config);
    await waitForDroneOnline(user, "boomerang");
    const fixture = await createProjectSession(user, {
      name: "Boomerang",
      modelUrl: model.baseUrl,
    });
    const word = `gadget-wait-boomerang-${process.pid}`;
    const before = model.chatRequests.length;
    const turnId = await longTurn(fixture.sessionId, fixture.providerId, word);

    drone.child.kill("SIGKILL");
    await drone.exited;
    const interrupted = await waitForTurn(user, turnId, finalStatuses, 30_000);
    expect(interrupted.status).toBe("interrupted");
    // What a SIGKILL between the journal's write and its sending leaves: text journaled, never sent.
    const journal = path.join(home, "boomerang", ".journal", `${turnId}.jsonl`);
    const lines = (await readFile(journal, "utf8")).split("\n").filter(Boolean);
    const seqs = lines.flatMap((line) => {
      const entry = JSON.parse(line) as { event?: { seq: number } };
      return entry.event ? [entry.event.seq] : [];
    });
    const unsent = {
      type: "token",
      data: { text: "UNSENT-TAIL " },
      seq: Math.max(0, ...seqs) + 1,
      at: new Date().toISOString(),
    };
    await appendFile(journal, `${JSON.stringify({ event: unsent })}\n`);

    model.enqueue({ text: "Finished after coming back." });
    drone = start(config);
    const turn = await waitForTurn(user, turnId, ["completed", "failed", "cancelled"], 40_000);
    expect(turn.status).toBe("completed");
    expect(turn.response).toContain("Finished after coming back");
    expect(turn.response).not.toContain("UNSENT");
    const drones = (await user.get("/api/drones")).body.drones as Array<{
      _id: string;
      name: string;
    }>;
    expect(turn.drone).toBe(drones.find((entry) => entry.name === "boomerang")?._id);
    // Pass 1 once, the cut pass 2 twice, the last call from the checkpoint.
    const calls = model.chatRequests.slice(before);
    expect(calls).toHaveLength(3);
    const resumedWith = JSON.stringify(calls[2]?.messages);
    expect(resumedWith).toContain("write_file");
    expect(resumedWith).not.toContain("Running the long job now");

    const events = await settledEvents(user, turnId);
    const stored = events.map((event) => event.seq);
    expect(stored).toEqual(stored.map((_, index) => index + 1));
    expect(JSON.stringify(events)).not.toContain("UNSENT");
    const types = events.map((event) => event.type);
    const firstDone = types.indexOf("done");
    expect(events[firstDone].data.reason).toBe("interrupted");
    const back = events.findIndex(
      (event, index) =>
        index > firstDone && event.type === "status" && event.data.phase === "retry",
    );
    expect(back).toBe(firstDone + 1);
    expect(JSON.stringify(events.slice(back))).toMatch(/boomerang came back with this turn/);
    expect(types.slice(back)).toContain("dispatched");
    expect(types.filter((type) => type === "done")).toHaveLength(2);
    await waitFor(() => !existsSync(journal), 10_000, "the finished turn's journal to go");
    drone.child.kill("SIGTERM");
    expect(await drone.exited).toBe(0);
  }, 90_000);

  it("network cut past the grace, process alive: the turn carries on by itself, the live run dropped", async () => {
    const link = await cuttableLink(server.url);
    try {
      const config = await register("steadfast", link.url);
      const drone = start(config);
      await waitForDroneOnline(user, "steadfast");
      const fixture = await createProjectSession(user, {
        name: "Steadfast",
        modelUrl: model.baseUrl,
      });
      const word = `gadget-wait-steadfast-${process.pid}`;
      const before = model.chatRequests.length;
      const turnId = await longTurn(fixture.sessionId, fixture.providerId, word);

      link.cut();
      const interrupted = await waitForTurn(user, turnId, finalStatuses, 40_000);
      expect(interrupted.status).toBe("interrupted");
      // The drone never stopped: its process and the cut pass's command still run, offline.
      expect(drone.child.exitCode).toBeNull();
      expect(processesWithArgument(word).length).toBeGreaterThan(0);

      model.enqueue({ text: "Finished after the network came back." });
      link.mend();
      const turn = await waitForTurn(user, turnId, ["completed", "failed", "cancelled"], 100_000);
      expect(turn.status).toBe("completed");
      expect(turn.response).toContain("Finished after the network came back");
      const drones = (await user.get("/api/drones")).body.drones as Array<{
        _id: string;
        name: string;
      }>;
      expect(turn.drone).toBe(drones.find((entry) => entry.name === "steadfast")?._id);
      // The live run was stopped (its command is gone), and the cut pass asked again once.
      await waitFor(() => processesWithArgument(word).length === 0, 10_000, "the cut command");
      const calls = model.chatRequests.slice(before);
      expect(calls).toHaveLength(3);
      const resumedWith = JSON.stringify(calls[2]?.messages);
      expect(resumedWith).toContain("write_file");
      expect(resumedWith).not.toContain("Running the long job now");

      const events = await settledEvents(user, turnId);
      const seqs = events.map((event) => event.seq);
      expect(seqs).toEqual(seqs.map((_, index) => index + 1));
      const types = events.map((event) => event.type);
      const firstDone = types.indexOf("done");
      expect(events[firstDone].data.reason).toBe("interrupted");
      const back = events.findIndex(
        (event, index) =>
          index > firstDone && event.type === "status" && event.data.phase === "retry",
      );
      expect(back).toBe(firstDone + 1);
      expect(JSON.stringify(events.slice(back))).toMatch(/steadfast came back with this turn/);
      expect(types.slice(back)).toContain("dispatched");
      expect(types.filter((type) => type === "done")).toHaveLength(2);
      // What streams after the marker (the cut pass's text dropped there) is the rerun alone.
      const streamed = events
        .slice(back)
        .filter((event) => event.type === "token")
        .map((event) => event.data.text)
        .join("");
      expect(streamed).toBe("Finished after the network came back.");
      const journal = path.join(home, "steadfast", ".journal", `${turnId}.jsonl`);
      await waitFor(() => !existsSync(journal), 10_000, "the finished turn's journal to go");
      expect(drone.child.exitCode).toBeNull();
      drone.child.kill("SIGTERM");
      expect(await drone.exited).toBe(0);
    } finally {
      await link.close();
    }
  }, 200_000);

  it("network cut past the grace, session off: the live run is cancelled, the turn stays interrupted", async () => {
    const link = await cuttableLink(server.url);
    try {
      const config = await register("homebody", link.url);
      const drone = start(config);
      await waitForDroneOnline(user, "homebody");
      const fixture = await createProjectSession(user, {
        name: "Homebody",
        modelUrl: model.baseUrl,
      });
      const patched = await user.patch(`/api/sessions/${fixture.sessionId}`, { autoResume: "off" });
      expect(patched.body.session.autoResume).toBe("off");
      const word = `gadget-wait-homebody-${process.pid}`;
      const before = model.chatRequests.length;
      const turnId = await longTurn(fixture.sessionId, fixture.providerId, word);

      link.cut();
      expect((await waitForTurn(user, turnId, finalStatuses, 40_000)).status).toBe("interrupted");
      expect(processesWithArgument(word).length).toBeGreaterThan(0);
      link.mend();
      // Back online, the drone is told to cancel its live run: the cut pass's command goes.
      await waitFor(() => processesWithArgument(word).length === 0, 100_000, "the cut command");
      await waitForDroneOnline(user, "homebody");
      const turn = (await user.get(`/api/turns/${turnId}`)).body.turn;
      expect(turn.status).toBe("interrupted");
      expect(model.chatRequests.length - before).toBe(2);
      const events = await settledEvents(user, turnId);
      const types = events.map((event) => event.type);
      expect(types.filter((type) => type === "done")).toHaveLength(1);
      expect(types.slice(types.indexOf("done"))).not.toContain("queued");
      drone.child.kill("SIGTERM");
      expect(await drone.exited).toBe(0);
    } finally {
      await link.close();
    }
  }, 200_000);

  it("SIGKILL and no return, session any-drone: the turn completes on a second drone", async () => {
    const gone = await register("gone");
    const spare = await register("spare");
    const drone = start(gone);
    await waitForDroneOnline(user, "gone");
    const fixture = await createProjectSession(user, { name: "Roaming", modelUrl: model.baseUrl });
    const patched = await user.patch(`/api/sessions/${fixture.sessionId}`, {
      autoResume: "any-drone",
    });
    expect(patched.body.session.autoResume).toBe("any-drone");
    const word = `gadget-wait-roaming-${process.pid}`;
    const turnId = await longTurn(fixture.sessionId, fixture.providerId, word);

    drone.child.kill("SIGKILL");
    await drone.exited;
    model.enqueue({ text: "Finished on the spare drone." });
    const second = start(spare);
    await waitForDroneOnline(user, "spare");
    const turn = await waitForTurn(user, turnId, ["completed", "failed", "cancelled"], 75_000);
    expect(turn.status).toBe("completed");
    const drones = (await user.get("/api/drones")).body.drones as Array<{
      _id: string;
      name: string;
    }>;
    expect(turn.drone).toBe(drones.find((entry) => entry.name === "spare")?._id);
    const events = await turnEvents(user, turnId);
    const types = events.map((event) => event.type);
    // Interrupted after the grace, then resumed by itself (no resume call was made).
    expect(types).toContain("drone_lost");
    expect(JSON.stringify(events)).toMatch(/Resumed by itself on another drone \(1 of 3/);
    expect(types.filter((type) => type === "done")).toHaveLength(2);
    second.child.kill("SIGTERM");
    expect(await second.exited).toBe(0);
  }, 100_000);
});
