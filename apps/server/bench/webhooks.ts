// Webhook delivery: how long from a turn's `done` reaching the server to the user's receiver
// reading the signed POST, beside a bare POST to the same receiver and a bare BullMQ job (the two
// hops a delivery cannot avoid) measured in the same run.
import { randomUUID } from "node:crypto";
import { agentEvent } from "@gadget/protocol";
import { ms, now, percentile, sleep } from "@gadget/testkit/measure";
import { ScriptedDrone, setupWorkspace, signup } from "@gadget/testkit/wire";
import { sha256 } from "../src/crypto/tokens.ts";
import { WebhookReceiver } from "../src/testing/webhook-receiver.ts";
import { baselineBullmq } from "./baselines.ts";
import { type Env, rows, seedDrones, startServer } from "./harness.ts";

export async function benchWebhooks(env: Env, samples = 200) {
  console.error("webhooks: starting server, drone and receiver");
  const receiver = await WebhookReceiver.start();
  // The receiver listens on loopback, which the default outbound policy refuses.
  const { server, database, url } = await startServer(env, `hooks_${randomUUID().slice(0, 6)}`, {
    GADGET_ALLOW_PRIVATE_NETWORK: "true",
  });
  let drone: ScriptedDrone | undefined;
  try {
    const user = await signup(url, "hooks");
    const workspace = await setupWorkspace(user);
    const created = await user.post("/api/webhooks", {
      url: receiver.url,
      events: ["turn.completed"],
    });
    if (created.status !== 201) throw new Error(`POST webhook: ${created.status}`);
    receiver.secret = created.body.secret;
    const [credential] = await seedDrones(database, user.userId, 1, "hooks");
    drone = await ScriptedDrone.connect({ url, ...credential!, capacity: 8, heartbeatMs: 5_000 });
    await sleep(500);
    const warmup = 10;
    const latencies: number[] = [];
    // The `done` batch's own round (stored, applied, acknowledged): the delivery starts beside it.
    const acks: number[] = [];
    for (let index = 0; index < samples + warmup; index++) {
      const posted = await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
        prompt: `turn ${index}`,
        providerId: workspace.providerId,
      });
      const turnId: string = posted.body.turn._id;
      await drone.nextWorkOrder();
      const before = receiver.received.length;
      const start = now();
      const ack = await drone.stream(turnId, [
        agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }),
      ]);
      if (!ack.ok) throw new Error(`done refused: ${JSON.stringify(ack)}`);
      const acked = now() - start;
      await receiver.waitForCount(before + 1);
      const delivery = receiver.received[before]!;
      if (!delivery.verified || delivery.payload.turn?._id !== turnId)
        throw new Error("the delivery was not this turn's, or its signature did not verify");
      if (index >= warmup) {
        latencies.push(delivery.at - start);
        acks.push(acked);
      }
    }
    console.error("webhooks: baselines");
    const bare: number[] = [];
    const body = JSON.stringify({ event: "turn.completed", bench: true });
    for (let index = 0; index < samples + warmup; index++) {
      const before = receiver.received.length;
      const start = now();
      const answer = await fetch(receiver.url, {
        method: "POST",
        headers: { "content-type": "application/json", "x-gadget-signature": sha256(body) },
        body,
      });
      await answer.arrayBuffer();
      await receiver.waitForCount(before + 1);
      if (index >= warmup) bare.push(receiver.received[before]!.at - start);
    }
    const bull = await baselineBullmq(env.redisUrl, samples);
    rows.push(
      {
        benchmark: "Webhook delivery (drone's `done` sent → receiver read the signed POST)",
        measure: "p50",
        gadget: ms(percentile(latencies, 50)),
        baseline: `${ms(percentile(bare, 50) + percentile(bull, 50))} (bare POST ${ms(percentile(bare, 50))} + BullMQ job ${ms(percentile(bull, 50))})`,
        target: "",
      },
      {
        benchmark: "",
        measure: "p99",
        gadget: ms(percentile(latencies, 99)),
        baseline: `${ms(percentile(bare, 99) + percentile(bull, 99))} (bare POST ${ms(percentile(bare, 99))} + BullMQ job ${ms(percentile(bull, 99))})`,
        target: "",
      },
      {
        benchmark: "The same turns' `done` batch acknowledged to the drone (stored and applied)",
        measure: "p50 / p99",
        gadget: `${ms(percentile(acks, 50))} / ${ms(percentile(acks, 99))}`,
        baseline: "—",
        target: "",
      },
    );
  } finally {
    drone?.close();
    await server.stop();
    await receiver.close();
    await database.connection.dropDatabase();
    await database.close();
  }
}
