// A provider that keeps answering 429 (with `Retry-After`) beyond the call's retries: the turn
// waits — the API shows `waiting: provider_rate_limit` with until when, a `quota_wait` event says
// it — and goes on by itself once the provider answers (a real server and CLI drone); a drone
// killed during the wait and restarted goes on with the same wait, to its end.
import type { GadgetServer } from "@gadget/server";
import { startTestServer } from "@gadget/server/testing";
import { type ScriptedModel, startScriptedModel } from "@gadget/testkit";
import { type ApiClient, signup, waitFor } from "@gadget/testkit/wire";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  createProjectSession,
  type DroneProcess,
  settledEvents,
  startCli,
  startRegisteredDrone,
  waitForTurn,
} from "./helpers.ts";

describe("a provider's rate limit", () => {
  let server: GadgetServer;
  let model: ScriptedModel;
  let user: ApiClient;
  let drone: DroneProcess | undefined;
  let patient: DroneProcess | undefined;

  beforeAll(async () => {
    server = await startTestServer(
      // A restarted drone must be back within the grace, on a machine that may be busy.
      { mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl"), droneGraceMs: 30_000 },
      `drone_rate_limit_${process.pid}`,
    );
    model = await startScriptedModel();
    user = await signup(server.url, "rate-limit");
    drone = (await startRegisteredDrone(user, server.url, "limited")).drone;
  });

  afterAll(async () => {
    drone?.child.kill("SIGKILL");
    patient?.child.kill("SIGKILL");
    await model?.close();
    await server?.close();
  });

  it("429 with Retry-After beyond the retries: the turn waits, says until when, and completes", async () => {
    const fixture = await createProjectSession(user, { name: "Limited", modelUrl: model.baseUrl });
    const limited = {
      error: { status: 429, message: "Rate limit reached", headers: { "retry-after": "2" } },
    };
    // The first call and its 4 retries are refused; the call after the wait is answered.
    model.enqueue(limited, limited, limited, limited, limited, {
      text: "Answered after the wait.",
    });
    const created = await user.post(`/api/sessions/${fixture.sessionId}/turns`, {
      prompt: "Say something",
      providerId: fixture.providerId,
    });
    const turnId = created.body.turn._id as string;

    // Watch the turn as a browser would: does it ever say it waits for the provider?
    const seen: { waiting: { reason: string; until?: string } | null } = { waiting: null };
    const watching = (async () => {
      for (;;) {
        const turn = (await user.get(`/api/turns/${turnId}`)).body.turn;
        if (turn.waiting?.reason === "provider_rate_limit") seen.waiting ??= turn.waiting;
        if (["completed", "failed", "cancelled", "interrupted"].includes(turn.status)) return;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    const turn = await waitForTurn(
      user,
      turnId,
      ["completed", "failed", "cancelled", "interrupted"],
      45_000,
    );
    await watching;
    expect(turn.status).toBe("completed");
    expect(turn.response).toContain("Answered after the wait");
    expect(turn.waiting ?? null).toBeNull();
    expect(seen.waiting).toMatchObject({ reason: "provider_rate_limit" });
    expect(Number.isNaN(Date.parse(String(seen.waiting?.until)))).toBe(false);

    const events = await settledEvents(user, turnId);
    const waits = events.filter((event) => event.type === "quota_wait");
    expect(waits).toHaveLength(1);
    expect(Date.parse(waits[0].data.until)).toBeGreaterThan(Date.parse(waits[0].data.since) - 1);
    expect(waits[0].data.message).toMatch(/Rate-limited by the provider/);
    expect(model.chatRequests.length).toBeGreaterThanOrEqual(6);
  }, 60_000);

  it("SIGKILL during a provider's rate-limit wait, then restart: the same wait goes on to its end, then the turn completes", async () => {
    // The first test's drone leaves: the turn must run on the one this test kills.
    drone?.child.kill("SIGTERM");
    await drone?.exited;
    drone = undefined;
    const started = await startRegisteredDrone(user, server.url, "patient");
    patient = started.drone;
    const fixture = await createProjectSession(user, { name: "Patient", modelUrl: model.baseUrl });
    const limited = (seconds: number) => ({
      error: {
        status: 429,
        message: "Rate limit reached",
        headers: { "retry-after": `${seconds}` },
      },
    });
    // The call and its 4 retries are refused; the last refusal asks for 20 s: the turn waits
    // (long enough for a busy machine to restart the drone within it).
    model.enqueue(limited(1), limited(1), limited(1), limited(1), limited(20));
    const chatCalls = () =>
      model.requests.filter((request) => request.path.endsWith("/chat/completions"));
    const before = chatCalls().length;
    const created = await user.post(`/api/sessions/${fixture.sessionId}/turns`, {
      prompt: "Say something",
      providerId: fixture.providerId,
    });
    const turnId = created.body.turn._id as string;
    const waiting = await waitFor(
      async () => {
        const turn = (await user.get(`/api/turns/${turnId}`)).body.turn;
        return turn.waiting?.reason === "provider_rate_limit" ? turn.waiting : null;
      },
      30_000,
      "the turn to wait for the provider",
    );
    const until = Date.parse(waiting.until);

    patient.child.kill("SIGKILL");
    await patient.exited;
    model.enqueue({ text: "Answered after the whole wait." });
    patient = startCli(["--config", started.config], started.home);
    const turn = await waitForTurn(
      user,
      turnId,
      ["completed", "failed", "cancelled", "interrupted"],
      45_000,
    );
    expect(turn.status).toBe("completed");
    expect(turn.response).toContain("Answered after the whole wait");
    // The restarted drone did not call the provider before the wait's end: one call after it.
    const calls = chatCalls().slice(before);
    expect(calls).toHaveLength(6);
    expect(calls[5]!.receivedAt).toBeGreaterThanOrEqual(until);
    // One wait, said again by the restarted drone with the same start and end.
    const events = await settledEvents(user, turnId);
    const waits = events.filter((event) => event.type === "quota_wait");
    expect(waits.map((event) => [event.data.since, event.data.until])).toEqual([
      [waiting.since, waiting.until],
      [waiting.since, waiting.until],
    ]);
    expect(waits[1].data.message).toMatch(/Still rate-limited/);
    patient.child.kill("SIGTERM");
    expect(await patient.exited).toBe(0);
  }, 120_000);
});
