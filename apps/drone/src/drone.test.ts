// The drone against a minimal Socket.IO server playing the server's part: work orders are validated
// at the edge and a bad one changes nothing.
import { readdir } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { DRONE_SOCKET_PATH, PROTOCOL_VERSION, workOrderSchema } from "@gadget/protocol";
import { makeTempDir } from "@gadget/testkit";
import { Server, type Socket } from "socket.io";
import { afterEach, describe, expect, it } from "vitest";
import { Drone } from "./drone.ts";
import { droneSandbox } from "./testing/sandbox.ts";

const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const droneId = "65f1a2b3c4d5e6f7a8b9c0d1";

async function setup() {
  const http = createServer();
  // The drones' own path, as the server serves it; the credential comes on the HTTP request.
  const server = new Server(http, { path: DRONE_SOCKET_PATH });
  let authorization: string | undefined;
  server.engine.on(
    "initial_headers",
    (_headers: unknown, request: { headers: Record<string, string> }) => {
      authorization = request.headers.authorization;
    },
  );
  const connected = new Promise<Socket>((resolve) =>
    server.of("/drones").on("connection", resolve),
  );
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const workspace = await makeTempDir("gadget-drone-unit-");
  const config = {
    server: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
    droneId,
    credential: "secret-credential",
    name: "unit",
    workspace,
    capacity: 1,
    registeredAt: new Date().toISOString(),
  };
  const drone = new Drone({
    config,
    ...(await droneSandbox(config)),
    version: "test",
    hostname: "h",
    platform: "p",
    logger: quiet,
  });
  await drone.start();
  const socket = await connected;
  return { server, drone, socket, workspace, authorization: () => authorization };
}

describe("Drone work orders", () => {
  let cleanup: () => Promise<void> = async () => {};
  afterEach(async () => cleanup());

  it("sends its identity, protocol version and running turns in the handshake", async () => {
    const { server, drone, socket, authorization } = await setup();
    cleanup = async () => {
      drone.close();
      await server.close();
    };
    expect(authorization()).toBe(`Drone ${droneId}:secret-credential`);
    expect(socket.handshake.auth).toMatchObject({
      droneId,
      credential: "secret-credential",
      protocolVersion: PROTOCOL_VERSION,
      sandbox: { kind: "bubblewrap", network: "isolated" },
      activeTurns: [],
    });
  });

  it("refuses a malformed work order with the paths of the bad fields, and starts nothing", async () => {
    const { server, drone, socket, workspace } = await setup();
    cleanup = async () => {
      drone.close();
      await server.close();
    };
    const answer = await socket.timeout(5000).emitWithAck("work_order", {
      turnId: "nope",
      project: { _id: droneId, name: "x", slug: "Bad Slug", gitUrl: "" },
      prompt: "",
    });
    expect(answer).toMatchObject({ ok: false, error: { code: "validation_failed" } });
    const paths = (answer as { error: { details: Array<{ path: string }> } }).error.details.map(
      (issue) => issue.path,
    );
    expect(paths).toEqual(
      expect.arrayContaining([
        "turnId",
        "project.slug",
        "project.gitUrl",
        "prompt",
        "provider",
        "session",
      ]),
    );
    expect(drone.turns.size).toBe(0);
    expect(await readdir(workspace)).toEqual([]);
  });

  it("answers unknown turns' control messages with a clear error", async () => {
    const { server, drone, socket } = await setup();
    cleanup = async () => {
      drone.close();
      await server.close();
    };
    const approval = await socket
      .timeout(5000)
      .emitWithAck("approval_decision", { turnId: droneId, approvalId: "a", approve: true });
    expect(approval).toMatchObject({ ok: false, error: { code: "not_found" } });
    const cancel = await socket.timeout(5000).emitWithAck("turn_cancel", { turnId: "not-an-id" });
    expect(cancel).toMatchObject({ ok: false, error: { code: "validation_failed" } });
  });

  it("takes a new work order into the slot of a turn that ended but is still sending its events", async () => {
    const { server, drone, socket, workspace } = await setup();
    // The server part holds its answers to the turns' batches until the second order is in.
    type Batch = { events: Array<{ type: string; seq: number }> };
    type Answer = (ack: { ok: true; lastSeq: number }) => void;
    const held: Array<() => void> = [];
    let holding = true;
    const ended = new Promise<void>((resolve) => {
      socket.on("turn_events", (batch: Batch, answer: Answer) => {
        const acknowledge = () => answer({ ok: true, lastSeq: batch.events.at(-1)?.seq ?? 0 });
        if (holding) held.push(acknowledge);
        else acknowledge();
        if (batch.events.some((event) => event.type === "done")) resolve();
      });
    });
    cleanup = async () => {
      holding = false;
      for (const acknowledge of held.splice(0)) acknowledge();
      await Promise.all([...drone.turns.values()].map((turn) => turn.finished));
      drone.close();
      await server.close();
    };
    const order = (turnId: string) =>
      workOrderSchema.parse({
        turnId,
        // Nothing to clone there: the turn fails in its first phase and ends.
        project: { _id: droneId, name: "Gone", slug: "gone", gitUrl: `${workspace}/missing.git` },
        session: { name: "Fix it", mode: "agent" },
        provider: { baseUrl: "http://127.0.0.1:9/v1", apiKey: "k", modelId: "m", params: {} },
        context: [],
        prompt: "Fix it",
      });
    const first = "65f1a2b3c4d5e6f7a8b9c0e1";
    expect(await socket.timeout(5000).emitWithAck("work_order", order(first))).toEqual({
      ok: true,
    });
    await ended;
    // The server freed the slot when it stored `done`: this drone of capacity 1 agrees.
    const second = "65f1a2b3c4d5e6f7a8b9c0e2";
    expect(await socket.timeout(5000).emitWithAck("work_order", order(second))).toEqual({
      ok: true,
    });
    expect([...drone.turns.keys()].sort()).toEqual([first, second]);
  });
});
