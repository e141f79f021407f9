// The fleet as operators run it: turns go only to drones with the labels they require, wait
// (saying for what) until one connects, ephemeral drones take one turn and are unregistered,
// reusable registration tokens register many drones until revoked.
import { agentEvent } from "@gadget/protocol";
import { describe, expect, it } from "vitest";
import {
  ApiClient,
  registerDrone,
  setupWorkspace,
  signup,
  waitFor,
} from "../testing/api-client.ts";
import { ScriptedDrone, type ScriptedDroneOptions } from "../testing/scripted-drone.ts";
import { useTestServer } from "../testing/use-test-server.ts";

const fixture = useTestServer();

async function connect(options: Omit<ScriptedDroneOptions, "url">) {
  const drone = await ScriptedDrone.connect({ url: fixture.server.url, ...options });
  fixture.drones.push(drone);
  return drone;
}

const finish = (text: string) => [
  agentEvent("response", { message: text }),
  agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }),
];

async function allOnline(user: ApiClient, count: number) {
  await waitFor(async () => {
    const drones = (await user.get("/api/drones")).body.drones as Array<{ status: string }>;
    return drones.length === count && drones.every((drone) => drone.status === "online");
  });
}

describe("fleet: labels and routing", () => {
  it("sends a turn only to a drone with the labels it and its project require, and waits for one", async () => {
    const user = await signup(fixture.server.url, "labels");
    const workspace = await setupWorkspace(user);
    const fleet: Record<string, { droneId: string; drone: ScriptedDrone }> = {};
    const kinds = {
      gpu: { user: ["gpu", "region=eu"], own: ["os=linux", "arch=x64", "sandbox=bubblewrap"] },
      laptop: { user: ["region=eu"], own: ["os=macos", "arch=arm64", "sandbox=seatbelt"] },
      runner: { user: [], own: ["os=linux", "arch=x64", "sandbox=none"] },
    };
    for (const [name, labels] of Object.entries(kinds)) {
      const registered = await registerDrone(user, { name, labels: labels.user, capacity: 4 });
      fleet[name] = {
        droneId: registered.droneId,
        drone: await connect({
          droneId: registered.droneId,
          credential: registered.credential,
          capacity: 4,
          labels: labels.own,
        }),
      };
    }
    await allOnline(user, 3);
    const listed = (await user.get("/api/drones")).body.drones as Array<{
      name: string;
      labels: string[];
    }>;
    expect(listed.find((drone) => drone.name === "gpu")?.labels).toEqual([
      "gpu",
      "region=eu",
      "os=linux",
      "arch=x64",
      "sandbox=bubblewrap",
    ]);

    const ranOn = async (requires: string[] | undefined) => {
      const posted = await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
        prompt: `needs ${requires?.join(" ") ?? "nothing"}`,
        providerId: workspace.providerId,
        ...(requires ? { requires } : {}),
      });
      expect(posted.status).toBe(202);
      const turnId = posted.body.turn._id as string;
      await waitFor(async () =>
        Object.values(fleet).some(({ drone }) =>
          drone.workOrders.some((order) => order.turnId === turnId),
        ),
      );
      const [name, holder] = Object.entries(fleet).find(([, { drone }]) =>
        drone.workOrders.some((order) => order.turnId === turnId),
      )!;
      await holder.drone.stream(turnId, finish("done"));
      await waitFor(
        async () => (await user.get(`/api/turns/${turnId}`)).body.turn.status === "completed",
      );
      return name;
    };
    // Each requirement has one drone that meets it; five turns each never stray.
    for (let index = 0; index < 5; index++) {
      expect(await ranOn(["gpu"])).toBe("gpu");
      expect(await ranOn(["os=macos"])).toBe("laptop");
      expect(await ranOn(["os=linux", "sandbox=none"])).toBe("runner");
    }
    // A bare key matches any value of it; the project's requirements apply too.
    await user.patch(`/api/projects/${workspace.projectId}`, { requires: ["region"] });
    expect(await ranOn(["os=linux"])).toBe("gpu");
    await user.patch(`/api/projects/${workspace.projectId}`, { requires: [] });

    // Nobody has `board=riscv`: the turn stays queued and says so, once.
    const waiting = await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
      prompt: "needs a riscv board",
      providerId: workspace.providerId,
      requires: ["board=riscv"],
    });
    const waitingId = waiting.body.turn._id as string;
    const statusOf = async () =>
      (
        (await user.get(`/api/turns/${waitingId}/events`)).body.events as Array<{
          type: string;
          data: { message?: string };
        }>
      ).filter((event) => event.type === "status");
    await waitFor(async () => (await statusOf()).length > 0);
    expect((await statusOf()).map((event) => event.data.message)).toEqual([
      "Waiting for a drone with label board=riscv: no online drone of yours has it",
    ]);
    const metrics = await fetch(`${fixture.server.url}/metrics`).then((answer) => answer.text());
    expect(metrics).toContain('gadget_turns_waiting_for_labels{requires="board=riscv"} 1');
    expect(metrics).toContain('gadget_drones_matching_waiting_turns{requires="board=riscv"} 0');
    // Another drone going online re-tries the queue: still nothing that matches, still one status.
    const other = await registerDrone(user, { name: "other" });
    await connect({
      droneId: other.droneId,
      credential: other.credential,
      labels: ["arch=x64"],
      capacity: 4,
    });
    await allOnline(user, 4);
    expect((await user.get(`/api/turns/${waitingId}`)).body.turn.status).toBe("queued");
    expect(await statusOf()).toHaveLength(1);

    // Automatic keys stay as the drone reports them: a user's `arch` or `os` is dropped.
    const relabelled = await user.patch(`/api/drones/${fleet.runner!.droneId}`, {
      labels: ["arch=riscv64", "os=haiku"],
    });
    expect(relabelled.status).toBe(200);
    expect(relabelled.body.drone.labels).toEqual(["os=linux", "arch=x64", "sandbox=none"]);
    expect((await user.get(`/api/turns/${waitingId}`)).body.turn.status).toBe("queued");
    // The user gives a drone the label: the waiting turn goes there at once.
    const given = await user.patch(`/api/drones/${other.droneId}`, { labels: ["board=riscv"] });
    expect(given.body.drone.labels).toEqual(["board=riscv", "arch=x64"]);
    await waitFor(
      async () => (await user.get(`/api/turns/${waitingId}`)).body.turn.status === "dispatched",
    );
    expect((await user.get(`/api/turns/${waitingId}`)).body.turn.drone).toBe(other.droneId);

    const bad = await user.patch(`/api/drones/${other.droneId}`, { labels: ["Has Space"] });
    expect(bad.status).toBe(400);
    const badTurn = await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
      prompt: "x",
      providerId: workspace.providerId,
      requires: ["=nokey"],
    });
    expect(badTurn.status).toBe(400);
    const stranger = await signup(fixture.server.url, "labels-stranger");
    expect(
      (await stranger.patch(`/api/drones/${other.droneId}`, { labels: ["mine"] })).status,
    ).toBe(404);
  });

  it("never strands a running turn when its drone's labels change", async () => {
    const user = await signup(fixture.server.url, "relabel-running");
    const workspace = await setupWorkspace(user);
    const registered = await registerDrone(user, { name: "gpu", labels: ["gpu"] });
    const drone = await connect({ droneId: registered.droneId, credential: registered.credential });
    await allOnline(user, 1);
    const posted = await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
      prompt: "A long GPU job",
      providerId: workspace.providerId,
      requires: ["gpu"],
    });
    const order = await drone.nextWorkOrder();
    await drone.stream(order.turnId, [agentEvent("status", { message: "Pass 1", pass: 1 })]);
    // The label goes away mid-turn: the turn it runs is its to finish.
    const relabelled = await user.patch(`/api/drones/${registered.droneId}`, { labels: [] });
    expect(relabelled.status).toBe(200);
    await drone.stream(order.turnId, finish("rendered"));
    await waitFor(
      async () => (await user.get(`/api/turns/${order.turnId}`)).body.turn.status === "completed",
    );
    expect((await user.get(`/api/turns/${posted.body.turn._id}`)).body.turn).toMatchObject({
      status: "completed",
      response: "rendered",
      drone: registered.droneId,
    });
  });

  it("gives an ephemeral drone one turn, then unregisters it", async () => {
    const user = await signup(fixture.server.url, "ephemeral");
    const workspace = await setupWorkspace(user);
    const registered = await registerDrone(user, { name: "one-shot", capacity: 4 });
    const drone = await connect({
      droneId: registered.droneId,
      credential: registered.credential,
      capacity: 1,
      ephemeral: true,
    });
    await allOnline(user, 1);
    expect((await user.get("/api/drones")).body.drones[0]).toMatchObject({ ephemeral: true });
    const post = (prompt: string) =>
      user.post(`/api/sessions/${workspace.sessionId}/turns`, {
        prompt,
        providerId: workspace.providerId,
      });
    const first = (await post("first")).body.turn._id as string;
    const order = await drone.nextWorkOrder();
    expect(order.turnId).toBe(first);
    const second = (await post("second")).body.turn._id as string;
    await drone.stream(first, finish("one"));
    await waitFor(async () => (await user.get("/api/drones")).body.drones.length === 0);
    // It never got the second turn, which waits for another drone.
    expect(drone.workOrders.map((item) => item.turnId)).toEqual([first]);
    expect((await user.get(`/api/turns/${second}`)).body.turn.status).toBe("queued");
    const again = await ScriptedDrone.connect({
      url: fixture.server.url,
      droneId: registered.droneId,
      credential: registered.credential,
    }).then(
      () => "connected",
      (error: Error & { code?: string }) => error.code,
    );
    expect(again).toBe("forbidden");
  });

  it("registers a fleet with a reusable token until it is revoked, and never shows it again", async () => {
    const user = await signup(fixture.server.url, "fleet-token");
    const created = await user.post("/api/drones/registration-tokens", {
      reusable: true,
      expiresInHours: 2,
      labels: ["pool=ci", "os=windows"],
    });
    expect(created.status).toBe(201);
    const token = created.body.token as string;
    expect(created.body.registrationToken).toMatchObject({
      reusable: true,
      labels: ["pool=ci"],
    });
    const anonymous = new ApiClient(fixture.server.url);
    const register = (name: string) =>
      anonymous.post("/api/drones/register", { token, name, labels: ["autoscaled"] });
    const one = await register("ci-1");
    const two = await register("ci-2");
    expect([one.status, two.status]).toEqual([201, 201]);
    expect(one.body.drone.labels).toEqual(["pool=ci", "autoscaled"]);
    const listed = await user.get("/api/drones/registration-tokens");
    expect(listed.body.registrationTokens).toHaveLength(1);
    expect(JSON.stringify(listed.body)).not.toContain(token);
    const id = listed.body.registrationTokens[0]._id as string;
    expect((await user.delete(`/api/drones/registration-tokens/${id}`)).status).toBe(204);
    expect((await register("ci-3")).status).toBe(401);
    // The drones it registered stay.
    expect((await user.get("/api/drones")).body.drones).toHaveLength(2);
    const stranger = await signup(fixture.server.url, "fleet-token-stranger");
    expect((await stranger.delete(`/api/drones/registration-tokens/${id}`)).status).toBe(404);

    // A single-use token is still single use.
    const single = await user.post("/api/drones/registration-tokens", {});
    const first = await anonymous.post("/api/drones/register", {
      token: single.body.token,
      name: "once",
    });
    const reuse = await anonymous.post("/api/drones/register", {
      token: single.body.token,
      name: "twice",
    });
    expect([first.status, reuse.status]).toEqual([201, 401]);
    const invalid = await user.post("/api/drones/registration-tokens", { expiresInHours: -1 });
    expect(invalid.status).toBe(400);
  });

  it("marks a drone older than the server as outdated", async () => {
    const user = await signup(fixture.server.url, "outdated");
    const registered = await registerDrone(user, { name: "old" });
    await connect({
      droneId: registered.droneId,
      credential: registered.credential,
      version: "0.0.9",
    });
    await allOnline(user, 1);
    expect((await user.get("/api/drones")).body.drones[0]).toMatchObject({
      version: "0.0.9",
      outdated: true,
    });
  });
});
