// A provider that keeps answering 429 (with `Retry-After`) beyond the call's retries: the turn
// waits — the API shows `waiting: provider_rate_limit` with until when, a `quota_wait` event says
// it — and goes on by itself once the provider answers (a real server and CLI drone).
import type { GadgetServer } from "@gadget/server";
import { startTestServer } from "@gadget/server/testing";
import { type ScriptedModel, startScriptedModel } from "@gadget/testkit";
import { type ApiClient, signup } from "@gadget/testkit/wire";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  createProjectSession,
  type DroneProcess,
  settledEvents,
  startRegisteredDrone,
  waitForTurn,
} from "./helpers.ts";

describe("a provider's rate limit", () => {
  let server: GadgetServer;
  let model: ScriptedModel;
  let user: ApiClient;
  let drone: DroneProcess | undefined;

  beforeAll(async () => {
    server = await startTestServer(
      { mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl") },
      `drone_rate_limit_${process.pid}`,
    );
    model = await startScriptedModel();
    user = await signup(server.url, "rate-limit");
    drone = (await startRegisteredDrone(user, server.url, "limited")).drone;
  });

  afterAll(async () => {
    drone?.child.kill("SIGKILL");
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
});
