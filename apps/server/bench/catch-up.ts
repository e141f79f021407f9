// Catch-up: a browser opening a long turn has every stored event replayed before live ones.
import { randomUUID } from "node:crypto";
import { agentEvent } from "@gadget/protocol";
import { ms, now, percentile } from "@gadget/testkit/measure";
import { IdeClient, ScriptedDrone, setupWorkspace, signup } from "@gadget/testkit/wire";
import { Types } from "mongoose";
import { type Env, rows, seedDrones, startServer } from "./harness.ts";

/**
 * A browser opening a long turn: everything stored is replayed, a page at a time, before live
 * events. Raw baselines: the same events read straight from the database in one query, and in
 * pages asked for with `$gt` alone (how the server asked before it bounded its pages).
 */
export async function benchCatchUp(env: Env, count: number) {
  console.error(`catch-up: one turn of ${count} stored events`);
  const { server, database, url } = await startServer(env, `catchup_${randomUUID().slice(0, 6)}`);
  const clients: Array<{ close(): void }> = [];
  try {
    const user = await signup(url, "catchup");
    const workspace = await setupWorkspace(user);
    const [credential] = await seedDrones(database, user.userId, 1, "catchup");
    const drone = await ScriptedDrone.connect({ url, ...credential!, capacity: 1 });
    clients.push(drone);
    const posted = await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
      prompt: "a long turn",
      providerId: workspace.providerId,
    });
    const turnId = String(posted.body.turn._id);
    await drone.nextWorkOrder();
    for (let sent = 0; sent < count; sent += 200) {
      const answer = await drone.stream(
        turnId,
        Array.from({ length: 200 }, (_, index) =>
          agentEvent("token", { text: `token ${sent + index} of a long answer ` }),
        ),
      );
      if (!answer.ok) throw new Error(`batch refused: ${answer.error.message}`);
    }
    const stored = drone.running.get(turnId)! - 1;
    const subscribeTimes: number[] = [];
    for (let round = 0; round < 3; round++) {
      const browser = await IdeClient.connect(url, user.token!);
      clients.push(browser);
      const started = now();
      const answer = await browser.subscribe({ turnId, after: 0 });
      subscribeTimes.push(now() - started);
      if (!answer.ok || browser.seqs(turnId).length !== stored)
        throw new Error(`catch-up gave ${browser.seqs(turnId).length} of ${stored} events`);
      browser.close();
    }
    const turn = new Types.ObjectId(turnId);
    const events = database.models.TurnEvent.collection;
    let started = now();
    const all = await events.find({ turn }).sort({ seq: 1 }).toArray();
    const oneQuery = now() - started;
    started = now();
    let read = 0;
    for (let after = 0; ; ) {
      const page = await events
        .find({ turn, seq: { $gt: after } })
        .sort({ seq: 1 })
        .limit(500)
        .toArray();
      read += page.length;
      if (page.length < 500) break;
      after = page[page.length - 1]!.seq as number;
    }
    const openPages = now() - started;
    if (all.length !== stored || read !== stored) throw new Error("baseline read a different turn");
    const median = percentile(subscribeTimes, 50);
    rows.push({
      benchmark: `A browser opening a turn of ${stored.toLocaleString("en")} stored events (subscribe after 0 → every event received, pages of 500)`,
      measure: "time to catch up (median of 3)",
      gadget: `${ms(median)} (${subscribeTimes.map((time) => time.toFixed(0)).join(", ")})`,
      baseline: `${ms(oneQuery)} one query straight from the database; ${ms(openPages)} pages asked with \`$gt\` alone`,
      target: "",
    });
  } finally {
    for (const client of clients) client.close();
    await server.stop();
    await database.connection.dropDatabase();
    await database.close();
  }
}
