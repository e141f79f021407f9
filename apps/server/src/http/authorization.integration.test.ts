// The authorisation matrix: user B gets 404 on every object of user A, and B's drone never
// receives A's work.
import { agentEvent } from "@gadget/protocol";
import { describe, expect, it } from "vitest";
import {
  ApiClient,
  registerDrone,
  setupWorkspace,
  signup,
  waitFor,
} from "../testing/api-client.ts";
import { ScriptedDrone } from "../testing/scripted-drone.ts";
import { useTestServer } from "../testing/use-test-server.ts";

const fixture = useTestServer();
const drones = fixture.drones;

describe("authorisation matrix", () => {
  it("answers 404 to user B on every object of user A, and B's drone never gets A's work", async () => {
    const alice = await signup(fixture.server.url, "alice");
    const bob = await signup(fixture.server.url, "bob");
    const a = await setupWorkspace(alice, { approval: "on-write" });
    const b = await setupWorkspace(bob);
    const aliceDrone = await registerDrone(alice, { name: "alice-drone" });
    const bobDrone = await registerDrone(bob, { name: "bob-drone", capacity: 8 });
    // Only Bob's drone is online, with Alice's workspace slug and plenty of capacity.
    const bobScripted = await ScriptedDrone.connect({
      url: fixture.server.url,
      droneId: bobDrone.droneId,
      credential: bobDrone.credential,
      capacity: 8,
      workspaces: [a.projectSlug],
    });
    drones.push(bobScripted);
    const turn = await alice.post(`/api/sessions/${a.sessionId}/turns`, {
      prompt: "secret",
      providerId: a.providerId,
    });
    expect(turn.status).toBe(202);
    const turnId = turn.body.turn._id;

    // Alice's turn may name Bob's drone or provider: both unknown to her.
    expect(
      (
        await alice.post(`/api/sessions/${a.sessionId}/turns`, {
          prompt: "x",
          providerId: a.providerId,
          droneId: bobDrone.droneId,
        })
      ).status,
    ).toBe(404);
    expect(
      (
        await alice.post(`/api/sessions/${a.sessionId}/turns`, {
          prompt: "x",
          providerId: b.providerId,
        })
      ).status,
    ).toBe(404);

    const attempts: Array<
      [string, () => Promise<{ status: number; body: { error?: { code: string } } }>]
    > = [
      ["GET turn", () => bob.get(`/api/turns/${turnId}`)],
      ["GET events", () => bob.get(`/api/turns/${turnId}/events`)],
      ["GET stream", () => bob.get(`/api/turns/${turnId}/stream`)],
      ["cancel", () => bob.post(`/api/turns/${turnId}/cancel`)],
      ["resume", () => bob.post(`/api/turns/${turnId}/resume`)],
      ["revert", () => bob.post(`/api/turns/${turnId}/revert`)],
      ["approve", () => bob.post(`/api/turns/${turnId}/approvals/ap-1`, { approve: true })],
      ["GET session turns", () => bob.get(`/api/sessions/${a.sessionId}/turns`)],
      [
        "POST turn in A's session",
        () =>
          bob.post(`/api/sessions/${a.sessionId}/turns`, { prompt: "x", providerId: b.providerId }),
      ],
      [
        "POST turn with A's provider",
        () =>
          bob.post(`/api/sessions/${b.sessionId}/turns`, { prompt: "x", providerId: a.providerId }),
      ],
      ["GET project sessions", () => bob.get(`/api/projects/${a.projectId}/sessions`)],
      [
        "POST project session",
        () => bob.post(`/api/projects/${a.projectId}/sessions`, { name: "x" }),
      ],
      ["GET files", () => bob.get(`/api/projects/${a.projectId}/files?path=`)],
      ["GET file", () => bob.get(`/api/projects/${a.projectId}/file?path=README.md`)],
      ["PUT file", () => bob.put(`/api/projects/${a.projectId}/file`, { path: "a", content: "b" })],
      ["DELETE drone", () => bob.delete(`/api/drones/${aliceDrone.droneId}`)],
      ["malformed id", () => bob.get("/api/turns/not-an-id")],
    ];
    for (const [name, attempt] of attempts) {
      const response = await attempt();
      expect({ name, status: response.status, code: response.body.error?.code }).toEqual({
        name,
        status: 404,
        code: "not_found",
      });
    }
    // Lists only ever show one's own objects.
    expect(
      (await bob.get("/api/projects")).body.projects.map((p: { _id: string }) => p._id),
    ).toEqual([b.projectId]);
    expect((await bob.get("/api/providers")).body.providers).toHaveLength(1);
    expect((await bob.get("/api/drones")).body.drones.map((d: { _id: string }) => d._id)).toEqual([
      bobDrone.droneId,
    ]);

    // Bob's drone cannot touch Alice's turn either.
    const forged = await bobScripted.sendBatch(turnId, [
      { ...agentEvent("token", { text: "x" }), seq: 2 },
    ]);
    expect(forged).toMatchObject({ ok: false, error: { code: "forbidden" } });
    expect((await bobScripted.checkpoint(turnId, [])).ok).toBe(false);

    // Alice's turn waits for Alice's drone; Bob's drone got nothing.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(bobScripted.workOrders).toHaveLength(0);
    expect((await alice.get(`/api/turns/${turnId}`)).body.turn.status).toBe("queued");
    const aliceScripted = await ScriptedDrone.connect({
      url: fixture.server.url,
      droneId: aliceDrone.droneId,
      credential: aliceDrone.credential,
    });
    drones.push(aliceScripted);
    expect((await aliceScripted.nextWorkOrder()).turnId).toBe(turnId);
    await waitFor(
      async () => (await alice.get(`/api/turns/${turnId}`)).body.turn.status === "dispatched",
    );
    expect(bobScripted.workOrders).toHaveLength(0);
  });

  it("answers 401 to a turn POST without a valid token, whatever else is wrong, and stores nothing", async () => {
    const alice = await signup(fixture.server.url, "carol");
    const a = await setupWorkspace(alice);
    const valid = { prompt: "x", providerId: a.providerId };
    const callers = [new ApiClient(fixture.server.url), new ApiClient(fixture.server.url, "gat_x")];
    for (const caller of callers) {
      const attempts = [
        caller.post(`/api/sessions/${a.sessionId}/turns`, valid),
        caller.post(`/api/sessions/${a.sessionId}/turns`, { prompt: "" }),
        caller.post(`/api/sessions/${a.sessionId}/turns`, { prompt: "x", providerId: "nope" }),
        caller.post("/api/sessions/not-an-id/turns", valid),
      ];
      for (const response of await Promise.all(attempts)) {
        expect({ status: response.status, code: response.body.error?.code }).toEqual({
          status: 401,
          code: "unauthorized",
        });
      }
    }
    expect((await alice.get(`/api/sessions/${a.sessionId}/turns`)).body.turns).toEqual([]);
  });
});
