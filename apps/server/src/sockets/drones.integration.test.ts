// Drone registration, handshake refusals, presence and revocation over real HTTP and Socket.IO.
import { PROTOCOL_VERSION, RELEASE_VERSION } from "@gadget/protocol";
import { describe, expect, it } from "vitest";
import { ApiClient, IdeClient, registerDrone, signup, waitFor } from "../testing/api-client.ts";
import { DroneRefused, ScriptedDrone } from "../testing/scripted-drone.ts";
import { useTestServer } from "../testing/use-test-server.ts";

const fixture = useTestServer();
const drones = fixture.drones;

async function connect(options: Parameters<typeof ScriptedDrone.connect>[0]) {
  const drone = await ScriptedDrone.connect(options);
  drones.push(drone);
  return drone;
}

describe("registration tokens", () => {
  it("come with the exact register command, work once, and give a credential shown once", async () => {
    const user = await signup(fixture.server.url, "reg");
    const created = await user.post("/api/drones/registration-tokens");
    expect(created.status).toBe(201);
    const { token, expiresAt, command } = created.body;
    expect(command).toBe(`gadget-drone register --server ${fixture.server.url} --token ${token}`);
    const ttl = new Date(expiresAt).getTime() - Date.now();
    expect(ttl).toBeGreaterThan(14 * 60_000);
    expect(ttl).toBeLessThanOrEqual(15 * 60_000);

    const anonymous = new ApiClient(fixture.server.url);
    const registered = await anonymous.post("/api/drones/register", {
      token,
      name: "laptop",
      hostname: "laptop.local",
      platform: "linux",
      version: "1.0.0",
      capacity: 2,
    });
    expect(registered.status).toBe(201);
    expect(registered.body.drone).toMatchObject({
      name: "laptop",
      status: "offline",
      capacity: 2,
      activeTurns: 0,
      hostname: "laptop.local",
    });
    expect(registered.body.credential).toMatch(/^gdc_/);
    const stored = await fixture.server.context.models.Drone.findById(
      registered.body.drone._id,
    ).lean();
    expect(JSON.stringify(stored)).not.toContain(registered.body.credential);

    const again = await anonymous.post("/api/drones/register", { token, name: "second" });
    expect(again.status).toBe(401);
    expect(again.body.error.message).toMatch(/already used|expired|invalid/);
    expect((await user.get("/api/drones")).body.drones).toHaveLength(1);
  });

  it("is refused once expired", async () => {
    const user = await signup(fixture.server.url, "expired");
    const created = await user.post("/api/drones/registration-tokens");
    await fixture.server.context.models.RegistrationToken.updateOne(
      { user: user.userId },
      { $set: { expiresAt: new Date(Date.now() - 1000) } },
    );
    const response = await new ApiClient(fixture.server.url).post("/api/drones/register", {
      token: created.body.token,
      name: "late",
    });
    expect(response.status).toBe(401);
    expect(response.body.error.code).toBe("unauthorized");
  });

  it("is single use even when two registrations race", async () => {
    const user = await signup(fixture.server.url, "race");
    const created = await user.post("/api/drones/registration-tokens");
    const anonymous = new ApiClient(fixture.server.url);
    const results = await Promise.all(
      [1, 2, 3].map((index) =>
        anonymous.post("/api/drones/register", { token: created.body.token, name: `d${index}` }),
      ),
    );
    expect(results.map((result) => result.status).sort()).toEqual([201, 401, 401]);
  });
});

describe("drone connections", () => {
  it("shows presence: online with capacity while connected, offline with lastSeenAt after", async () => {
    const user = await signup(fixture.server.url, "presence");
    const { droneId, credential } = await registerDrone(user, { name: "box", capacity: 3 });
    const ide = await IdeClient.connect(fixture.server.url, user.token!);
    const updates: string[] = [];
    ide.socket.on("drone_update", ({ drone }) => updates.push(drone.status));
    const drone = await connect({ url: fixture.server.url, droneId, credential, capacity: 3 });
    const online = await waitFor(async () => {
      const listed = (await user.get("/api/drones")).body.drones[0];
      return listed.status === "online" ? listed : null;
    });
    expect(online).toMatchObject({
      capacity: 3,
      activeTurns: 0,
      hostname: "scripted-host",
      platform: "test",
      version: "0.0.0-test",
    });
    drone.close();
    const offline = await waitFor(async () => {
      const listed = (await user.get("/api/drones")).body.drones[0];
      return listed.status === "offline" ? listed : null;
    });
    expect(offline.lastSeenAt).not.toBeNull();
    await waitFor(
      () => updates.includes("online") && updates.includes("offline"),
      5000,
      "drone updates",
    );
    ide.close();
  });

  it("refuses unknown drones, wrong credentials and other protocol versions with a clear reason", async () => {
    const user = await signup(fixture.server.url, "refuse");
    const { droneId, credential } = await registerDrone(user);
    const attempt = (options: Partial<Parameters<typeof ScriptedDrone.connect>[0]>) =>
      connect({ url: fixture.server.url, droneId, credential, ...options }).then(
        () => null,
        (error: unknown) => error as DroneRefused,
      );
    const unknown = await attempt({ droneId: "0123456789abcdef01234567" });
    expect(unknown).toMatchObject({ code: "unauthorized" });
    expect(unknown?.message).toMatch(/Unknown drone/);
    const wrong = await attempt({ credential: "gdc_wrong" });
    expect(wrong).toMatchObject({ code: "unauthorized" });
    const old = await attempt({ protocolVersion: PROTOCOL_VERSION + 1 });
    expect(old).toMatchObject({ code: "protocol_mismatch" });
    // It names the version to install, so the operator knows what to do.
    expect(old?.message).toContain(`Install gadget-drone ${RELEASE_VERSION}`);
    expect(old?.message).toContain("gadget-drone update, or its /install.sh");
  });

  it("revocation kicks a connected drone at once and refuses it afterwards", async () => {
    const user = await signup(fixture.server.url, "revoke");
    const { droneId, credential } = await registerDrone(user);
    const drone = await connect({ url: fixture.server.url, droneId, credential });
    const deleted = await user.delete(`/api/drones/${droneId}`);
    expect(deleted.status).toBe(204);
    await drone.waitForDisconnect();
    expect(drone.revocations).toHaveLength(1);
    const again = await connect({ url: fixture.server.url, droneId, credential }).catch(
      (error: unknown) => error,
    );
    expect(again).toBeInstanceOf(DroneRefused);
    expect(again).toMatchObject({ code: "forbidden" });
    expect((again as Error).message).toMatch(/revoked/);
    expect((await user.get("/api/drones")).body.drones).toHaveLength(0);
    expect((await user.delete(`/api/drones/${droneId}`)).status).toBe(404);
  });

  it("keeps one connection per drone: a second connection replaces the first", async () => {
    const user = await signup(fixture.server.url, "twice");
    const { droneId, credential } = await registerDrone(user);
    const first = await connect({ url: fixture.server.url, droneId, credential });
    const second = await connect({ url: fixture.server.url, droneId, credential });
    await first.waitForDisconnect();
    expect(second.connected).toBe(true);
    const listed = await waitFor(async () => {
      const drone = (await user.get("/api/drones")).body.drones[0];
      return drone.status === "online" ? drone : null;
    });
    expect(listed.status).toBe("online");
  });
});
