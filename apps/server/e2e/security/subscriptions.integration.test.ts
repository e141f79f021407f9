// Finding 5: live subscriptions that outlive their reader — subscribe, unsubscribe, disconnect
// and an aborted SSE request in every order. What leaks shows in `gadget_live_subscriptions`
// (/metrics) and in events that keep arriving after an unsubscribe.
import { request as httpRequest, type IncomingMessage } from "node:http";
import { agentEvent } from "@gadget/protocol";
import { describe, expect, it } from "vitest";
import {
  IdeClient,
  registerDrone,
  setupWorkspace,
  signup,
  waitFor,
} from "../../src/testing/api-client.ts";
import { ScriptedDrone } from "../../src/testing/scripted-drone.ts";
import { useTestServer } from "../../src/testing/use-test-server.ts";

const fixture = useTestServer();

/** `gadget_live_subscriptions` as an operator reads it. */
async function liveSubscriptions(): Promise<number> {
  const text = await (await fetch(`${fixture.server.url}/metrics`)).text();
  const line = text.split("\n").find((row) => row.startsWith("gadget_live_subscriptions "));
  return Number(line?.split(" ")[1]);
}

/** Waits until the gauge is back to `baseline` and stays there. */
async function settlesAt(baseline: number): Promise<void> {
  await waitFor(
    async () => (await liveSubscriptions()) === baseline,
    5_000,
    "subscriptions to end",
  );
  await new Promise((resolve) => setTimeout(resolve, 200));
  expect(await liveSubscriptions()).toBe(baseline);
}

/** A user with a turn running on a scripted drone. */
async function runningTurn(name: string) {
  const user = await signup(fixture.server.url, name);
  const workspace = await setupWorkspace(user);
  const { droneId, credential } = await registerDrone(user);
  const drone = await ScriptedDrone.connect({ url: fixture.server.url, droneId, credential });
  fixture.drones.push(drone);
  const posted = await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
    prompt: "stream",
    providerId: workspace.providerId,
  });
  const turnId = String(posted.body.turn._id);
  await drone.nextWorkOrder();
  return { user, drone, turnId };
}

describe("finding 5: subscriptions over /ide", () => {
  it("two concurrent subscribes of one turn and one unsubscribe leave nothing subscribed", async () => {
    const { user, drone, turnId } = await runningTurn("twice");
    const baseline = await liveSubscriptions();
    const browser = await IdeClient.connect(fixture.server.url, String(user.token));
    const answers = await Promise.all([
      browser.subscribe({ turnId }),
      browser.subscribe({ turnId }),
    ]);
    expect(answers.every((answer) => answer.ok)).toBe(true);
    await browser.socket.timeout(5_000).emitWithAck("unsubscribe", { turnId });
    await settlesAt(baseline);
    const heard = browser.seqs(turnId).length;
    await drone.stream(turnId, [agentEvent("token", { text: "after unsubscribe" })]);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(browser.seqs(turnId).length).toBe(heard);
    browser.close();
  });

  it("an unsubscribe sent while the subscribe is still being checked wins", async () => {
    const { user, drone, turnId } = await runningTurn("unsubscribe-race");
    const baseline = await liveSubscriptions();
    const browser = await IdeClient.connect(fixture.server.url, String(user.token));
    const subscribed = browser.subscribe({ turnId, after: 1_000 });
    await browser.socket.timeout(5_000).emitWithAck("unsubscribe", { turnId });
    await subscribed;
    await settlesAt(baseline);
    await drone.stream(turnId, [agentEvent("token", { text: "nobody listens" })]);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(browser.seqs(turnId)).toEqual([]);
    browser.close();
  });

  it("a socket that disconnects while its subscribes are being checked leaves nothing", async () => {
    const { user, turnId } = await runningTurn("vanish");
    const baseline = await liveSubscriptions();
    for (let round = 0; round < 30; round++) {
      const browser = await IdeClient.connect(fixture.server.url, String(user.token));
      void browser.subscribe({ turnId }).catch(() => undefined);
      void browser.subscribe({ turnId }).catch(() => undefined);
      // Gone while the server reads the turn, at a different moment each round.
      await new Promise((resolve) => setTimeout(resolve, round % 10));
      browser.close();
    }
    await settlesAt(baseline);
  });

  it("one socket follows at most 50 turns and sessions; the 51st is refused, the rest go on", async () => {
    const { user, drone, turnId } = await runningTurn("hoarder");
    const workspace = await setupWorkspace(user, { projectName: "many sessions" });
    const sessions: string[] = [];
    for (let index = 0; index < 50; index++) {
      const created = await user.post(`/api/projects/${workspace.projectId}/sessions`, {
        name: `s${index}`,
      });
      sessions.push(String(created.body.session._id));
    }
    const browser = await IdeClient.connect(fixture.server.url, String(user.token));
    await browser.subscribe({ turnId });
    for (const sessionId of sessions.slice(0, 49)) {
      expect((await browser.subscribe({ sessionId })).ok).toBe(true);
    }
    const refused = await browser.subscribe({ sessionId: sessions[49] });
    expect(refused).toMatchObject({ ok: false, error: { code: "rate_limited" } });
    // Subscribing again to what it follows is not one more.
    expect((await browser.subscribe({ turnId })).ok).toBe(true);
    await drone.stream(turnId, [agentEvent("token", { text: "still live" })]);
    await waitFor(() => browser.seqs(turnId).length > 0, 5_000, "the turn's events");
    browser.close();
  });
});

describe("finding 5: server-sent events", () => {
  it("SSE requests dropped while the server reads their token and turn leave no subscription", async () => {
    const { user, turnId } = await runningTurn("aborter");
    const baseline = await liveSubscriptions();
    // The connection drops just as the server takes the request: whatever the server does next
    // (read the token, then the turn) happens after the client is gone.
    const drop = (request: IncomingMessage) => {
      if (request.headers["x-drop"]) request.socket.destroy();
    };
    fixture.server.http.server.prependListener("request", drop);
    const url = new URL(`/api/turns/${turnId}/stream`, fixture.server.url);
    const send = (headers: Record<string, string>, abortAfterMs?: number) =>
      new Promise<void>((resolve) => {
        const request = httpRequest(url, {
          headers: { authorization: `Bearer ${user.token}`, ...headers },
        });
        request.on("error", () => resolve());
        request.on("close", () => resolve());
        request.end();
        if (abortAfterMs !== undefined) setTimeout(() => request.destroy(), abortAfterMs);
      });
    try {
      await Promise.all(Array.from({ length: 100 }, () => send({ "x-drop": "1" })));
      // And clients leaving at every moment of their own.
      await Promise.all(Array.from({ length: 200 }, (_, index) => send({}, index % 10)));
    } finally {
      fixture.server.http.server.removeListener("request", drop);
    }
    await settlesAt(baseline);
  });
});
