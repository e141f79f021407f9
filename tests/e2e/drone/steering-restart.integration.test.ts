// A steering message posted while the turn's drone is cut off, just before the server restarts,
// is delivered after the restart: stored by the server that took the POST, sent by the new one
// when the real drone (the CLI) reconnects, and heard by the model in the turn it was posted to.
import { existsSync, readFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import type { GadgetServer } from "@gadget/server";
import { createGadgetServer } from "@gadget/server";
import { startTestServer, testConfig } from "@gadget/server/testing";
import { type ScriptedModel, type ScriptedRequest, startScriptedModel } from "@gadget/testkit";
import { type NetworkLink, startNetworkLink } from "@gadget/testkit/browser";
import { type ApiClient, signup, waitFor } from "@gadget/testkit/wire";
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

/** What each message of a model request said. */
function said(request: ScriptedRequest): string[] {
  return request.body.messages.map((message) =>
    typeof message.content === "string" ? message.content : JSON.stringify(message.content),
  );
}

describe("a steering message across a server restart", () => {
  const name = `drone_steering_restart_${process.pid}`;
  // The grace outlasts a server's stop and start on a loaded machine: the turn is not given up.
  const serverOptions = () => ({
    mongoUrl: inject("mongoUrl"),
    redisUrl: inject("redisUrl"),
    droneGraceMs: 30_000,
  });
  let server: GadgetServer;
  let model: ScriptedModel;
  let user: ApiClient;
  let drone: DroneProcess;
  let link: NetworkLink;
  let workspace: string;
  let providerId: string;
  let sessionId: string;

  beforeAll(async () => {
    server = await startTestServer(serverOptions(), name);
    model = await startScriptedModel();
    user = await signup(server.url, "steering-restart");
    const home = await freshHome();
    workspace = path.join(home, "workspaces");
    const config = path.join(home, "drone.json");
    const registered = await registerWithCli(user, server.url, {
      name: "restarted",
      workspace,
      config,
      home,
    });
    expect(registered.code, registered.stderr).toBe(0);
    // The drone reaches the server through a link the test cuts.
    link = await startNetworkLink(server.url);
    const settings = JSON.parse(await readFile(config, "utf8"));
    await writeFile(config, JSON.stringify({ ...settings, server: link.url }), { mode: 0o600 });
    drone = startCli(["--config", config], home, { GADGET_DRONE_HEARTBEAT_MS: "500" });
    await waitForDroneOnline(user, "restarted");
    ({ providerId, sessionId } = await createProjectSession(user, {
      name: "Restart",
      modelUrl: model.baseUrl,
    }));
  });

  afterAll(async () => {
    drone?.child.kill("SIGKILL");
    await drone?.exited;
    await link?.close();
    await model?.close();
    await server?.close();
  });

  it("delivers a message posted just before the restart once the drone is back, to the model's next request", async () => {
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const requests: ScriptedRequest[] = [];
    const readme = { toolCalls: [{ name: "read_file", arguments: { path: "README.md" } }] };
    model.setHandler(async (request) => {
      requests.push(request);
      if (requests.length === 1) {
        await released;
        return readme;
      }
      return said(request).includes("Say it after the restart")
        ? { text: "Heard after the restart." }
        : readme;
    });
    const created = await user.post(`/api/sessions/${sessionId}/turns`, {
      prompt: "Read and wait for a word",
      providerId,
    });
    expect(created.status).toBe(202);
    const turnId = created.body.turn._id as string;
    await waitFor(async () => requests.length === 1, 30_000, "the first model call");

    // The drone is cut off, so the server cannot hand the message on before it stops.
    link.setDown(true);
    await waitFor(
      async () =>
        (await user.get(`/api/turns/${turnId}`)).body.turn.waiting?.reason === "drone_offline",
      10_000,
      "the turn to wait for its drone",
    );
    const posted = await user.post(`/api/turns/${turnId}/messages`, {
      text: "Say it after the restart",
    });
    expect(posted.status).toBe(202);
    const messageId = posted.body.message._id as string;

    const port = server.port;
    await server.close();
    server = await createGadgetServer(testConfig({ ...serverOptions(), port }, name));
    const journal = path.join(workspace, ".journal", `${turnId}.jsonl`);
    expect(existsSync(journal) && readFileSync(journal, "utf8").includes(messageId)).toBe(false);
    link.setDown(false);
    // The new server sends the stored message when the drone is back; the drone journals it.
    await waitFor(
      async () => existsSync(journal) && readFileSync(journal, "utf8").includes(messageId),
      30_000,
      "the drone to journal the message",
    );
    release();

    const finished = await waitForTurn(user, turnId, ["completed", "failed"], 45_000);
    model.setHandler(undefined);
    expect(finished).toMatchObject({ status: "completed", response: "Heard after the restart." });
    const taken = (await turnEvents(user, turnId))
      .filter((event) => event.type === "user_message")
      .map((event) => event.data);
    expect(taken).toEqual([{ messageId, text: "Say it after the restart" }]);
    const messages = (await user.get(`/api/turns/${turnId}/messages`)).body.messages;
    expect(messages).toMatchObject([{ _id: messageId, status: "delivered" }]);
    // In the request right after the pass it arrived in: after that pass's tool result.
    const second = requests[1] as ScriptedRequest;
    const heard = said(second).indexOf("Say it after the restart");
    expect(heard).toBeGreaterThan(0);
    expect(second.body.messages[heard - 1]?.role).toBe("tool");
  }, 120_000);
});
