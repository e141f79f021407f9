// Steering: how long a message takes from `POST /api/turns/:id/messages` to the drone holding the
// turn, beside a work order's dispatch (`POST /api/sessions/:id/turns` → work order at the drone)
// in the same run, one after the other on the same server, user and drones.
import { randomUUID } from "node:crypto";
import { agentEvent } from "@gadget/protocol";
import { ms, now, percentile, pool, sleep } from "@gadget/testkit/measure";
import { ScriptedDrone, setupWorkspace, signup } from "@gadget/testkit/wire";
import { type Env, rows, seedDrones, startServer } from "./harness.ts";

export async function benchSteering(env: Env, samples = 200) {
  console.error("steering: starting server and 10 drones");
  const { server, url, database } = await startServer(env, `steering_${randomUUID().slice(0, 6)}`);
  const drones: ScriptedDrone[] = [];
  try {
    const user = await signup(url, "steerer");
    const workspace = await setupWorkspace(user);
    const waiters = new Map<string, (at: number) => void>();
    const holders = new Map<string, ScriptedDrone>();
    const credentials = await seedDrones(database, user.userId, 10, "steer");
    drones.push(
      ...(await pool(credentials, 10, (credential) => {
        const drone: Promise<ScriptedDrone> = ScriptedDrone.connect({
          url,
          ...credential,
          capacity: 8,
          heartbeatMs: 5_000,
          onWorkOrder: async (order) => {
            holders.set(order.turnId, await drone);
            waiters.get(order.prompt)?.(now());
            return { ok: true };
          },
          onTurnMessage: (message) => waiters.get(message.text)?.(now()),
        });
        return drone;
      })),
    );
    await sleep(1_000);
    const arrival = (key: string) =>
      new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${key} did not arrive`)), 10_000);
        waiters.set(key, (at) => {
          clearTimeout(timer);
          waiters.delete(key);
          resolve(at);
        });
      });
    const warmup = 10;
    const dispatches: number[] = [];
    const steers: number[] = [];
    for (let index = 0; index < samples + warmup; index++) {
      if (index % 20 === 0) console.error(`steering: sample ${index}`);
      // A session per turn, made before the clock starts.
      const session = await user.post(`/api/projects/${workspace.projectId}/sessions`, {
        name: `steer ${index}`,
      });
      const prompt = `prompt ${index} ${randomUUID()}`;
      const ordered = arrival(prompt);
      const dispatchStart = now();
      const posted = await user.post(`/api/sessions/${session.body.session._id}/turns`, {
        prompt,
        providerId: workspace.providerId,
      });
      const dispatchedAt = await ordered;
      const turnId = posted.body.turn._id as string;
      const text = `message ${index} ${randomUUID()}`;
      const taken = arrival(text);
      const steerStart = now();
      const sent = await user.post(`/api/turns/${turnId}/messages`, { text });
      if (sent.status !== 202) throw new Error(`POST message: ${sent.status}`);
      const takenAt = await taken;
      if (index >= warmup) {
        dispatches.push(dispatchedAt - dispatchStart);
        steers.push(takenAt - steerStart);
      }
      const holder = holders.get(turnId);
      // The turn takes the message and ends, so the drones' slots never run out (a message it
      // did not take would become the session's next turn).
      if (!holder) throw new Error(`no drone holds ${turnId}`);
      const ended = await holder.stream(turnId, [
        agentEvent("user_message", { messageId: sent.body.message._id, text }),
        agentEvent("done", { reason: "completed", passes: 0, totalCost: 0 }),
      ]);
      if (!ended.ok) throw new Error(`done refused: ${JSON.stringify(ended)}`);
    }
    for (const p of [50, 99]) {
      rows.push({
        benchmark:
          p === 50
            ? "Steering message, 10 drones (POST message → in the drone's hands), beside a work order's dispatch in the same run"
            : "",
        measure: `p${p}`,
        gadget: `${ms(percentile(steers, p))} (${(percentile(steers, p) / percentile(dispatches, p)).toFixed(2)}×)`,
        baseline: `dispatch ${ms(percentile(dispatches, p))}`,
        target: "within 1.2×",
      });
    }
  } finally {
    for (const drone of drones) drone.close();
    await server.stop();
  }
}
