// How soon a lost drone shows, and how soon a restarted one streams its turn again: a real
// gadget-drone streams a command's output (ten lines a second); it is killed (SIGKILL) and
// started again, five times. Measured: kill → `drone_lost` reaching a watching browser's socket;
// the drone online again → the turn's output streaming again (no resume call: it carries on),
// within the grace and after it (the turn interrupted meanwhile, taken back from the journal).
// Baseline in the same run: a turn posted to the online, idle drone → its first output.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { startTestServer } from "@gadget/server/testing";
import {
  databaseUrl,
  findRepoRoot,
  type RestartableService,
  startRestartableMongo,
  startRestartableRedis,
} from "@gadget/services";
import { startScriptedModel } from "@gadget/testkit";
import { percentile } from "@gadget/testkit/measure";
import { IdeClient, signup, waitFor } from "@gadget/testkit/wire";
import { createRemote } from "gadget-drone/testing";
import { registerWithCli } from "../drone/helpers.ts";
import { droneBin } from "../paths.ts";

const rounds = Number(process.env.BENCH_LOSSES ?? 5);
/** Short, so the rounds back after the grace do not wait long; the others come back well within. */
const graceMs = Number(process.env.BENCH_LOSS_GRACE_MS ?? 15_000);

async function main(): Promise<void> {
  const base = await mkdtemp(path.join(tmpdir(), "gadget-bench-loss-"));
  const services: RestartableService[] = [];
  let drone: ChildProcess | null = null;
  let remoteDirectory: string | null = null;
  try {
    const mongo = await startRestartableMongo(findRepoRoot(), path.join(base, "mongo"));
    const redis = await startRestartableRedis(path.join(base, "redis"));
    services.push(mongo, redis);
    const mongoUrl = databaseUrl(mongo.url, "bench_loss");
    const server = await startTestServer({ mongoUrl, redisUrl: redis.url, droneGraceMs: graceMs });
    const model = await startScriptedModel({ apiKey: "sk-bench" });
    const user = await signup(server.url, "bench-loss");
    const remote = await createRemote({ "README.md": "# Loss\n" });
    remoteDirectory = path.dirname(remote.bare);
    const project = await user.post("/api/projects", { name: "Loss", gitUrl: remote.bare });
    const session = await user.post(`/api/projects/${project.body.project._id}/sessions`, {
      name: "streaming",
    });
    const home = path.join(base, "home");
    const config = path.join(home, "drone.json");
    const registered = await registerWithCli(user, server.url, {
      name: "real",
      workspace: path.join(home, "workspaces"),
      config,
      home,
    });
    if (registered.code !== 0)
      throw new Error(`register exited ${registered.code}: ${registered.stderr}`);
    const env = { ...process.env, HOME: home, GADGET_DRONE_HEARTBEAT_MS: "1000" };
    const online = async () =>
      ((await user.get("/api/drones")).body.drones as Array<{ name: string; status: string }>).some(
        (entry) => entry.name === "real" && entry.status === "online",
      );
    const startDrone = () =>
      spawn(process.execPath, [droneBin, "start", "--json", "--config", config], {
        env,
        stdio: "ignore",
      });
    drone = startDrone();
    await waitFor(online, 30_000, "the drone online");
    const provider = await user.post("/api/providers", {
      name: "bench",
      baseUrl: model.baseUrl,
      apiKey: "sk-bench",
      modelId: "scripted-model",
    });
    const stream = {
      toolCalls: [
        {
          name: "run_command",
          arguments: {
            command: `node -e "let i = 0; setInterval(() => console.log('tick ' + ++i), 100)"`,
            timeout_ms: 600_000,
          },
        },
      ],
    };
    const browser = await IdeClient.connect(server.url, user.token ?? "");
    const lost: number[] = [];
    const streamingAgain: number[] = [];
    const streamingAfterGrace: number[] = [];
    const fresh: number[] = [];
    const turnStatus = async (turnId: string) =>
      (await user.get(`/api/turns/${turnId}`)).body.turn.status as string;
    for (let round = 0; round < rounds * 2; round++) {
      // Odd rounds come back after the grace: the turn is interrupted before the drone restarts.
      const afterGrace = round % 2 === 1;
      model.enqueue(stream, stream);
      const posted = performance.now();
      const created = await user.post(`/api/sessions/${session.body.session._id}/turns`, {
        prompt: "Stream for a while",
        providerId: provider.body.provider._id,
      });
      const turnId = created.body.turn._id as string;
      const arrivals: Array<{ type: string; at: number }> = [];
      const listener = ({
        turnId: id,
        events,
      }: {
        turnId: string;
        events: Array<{ type: string }>;
      }) => {
        if (id !== turnId) return;
        const at = performance.now();
        for (const event of events) arrivals.push({ type: event.type, at });
      };
      browser.socket.on("turn_events", listener);
      await browser.subscribe({ turnId });
      const first = await waitFor(
        () => arrivals.find((event) => event.type === "tool_output"),
        60_000,
        "the turn's first output",
      );
      fresh.push((first as { at: number }).at - posted);
      await waitFor(
        () => arrivals.filter((event) => event.type === "tool_output").length > 5,
        60_000,
        "the turn streaming",
      );
      const killed = performance.now();
      drone.kill("SIGKILL");
      const seen = await waitFor(
        () => arrivals.find((event) => event.type === "drone_lost" && event.at >= killed),
        30_000,
        "drone_lost",
      );
      lost.push((seen as { at: number }).at - killed);
      if (afterGrace) {
        await waitFor(
          async () => (await turnStatus(turnId)) === "interrupted",
          60_000,
          "the turn interrupted after the grace",
        );
      }
      drone = startDrone();
      await waitFor(online, 30_000, "the drone online again");
      const back = performance.now();
      const again = await waitFor(
        () => arrivals.find((event) => event.type === "tool_output" && event.at > seen!.at),
        60_000,
        "the turn streaming again",
      );
      (afterGrace ? streamingAfterGrace : streamingAgain).push(
        Math.max(0, (again as { at: number }).at - back),
      );
      await user.post(`/api/turns/${turnId}/cancel`);
      await waitFor(
        async () =>
          ["cancelled", "completed", "failed", "interrupted"].includes(
            (await user.get(`/api/turns/${turnId}`)).body.turn.status,
          ),
        30_000,
        "the turn to end",
      );
      browser.socket.off("turn_events", listener);
    }
    browser.close();

    console.log(
      `\n### Drone loss and return (${rounds * 2} SIGKILLs of a drone streaming a turn, half back after the grace)\n`,
    );
    console.log("| measured | p50 / p95 ms | target |");
    console.log("|---|---|---|");
    const cell = (values: number[]) =>
      `${percentile(values, 50).toFixed(0)} / ${percentile(values, 95).toFixed(0)}`;
    console.log(
      `| kill → \`drone_lost\` on a browser's socket | ${percentile(lost, 50).toFixed(0)} / ${percentile(lost, 95).toFixed(0)} | < 2 000 |`,
    );
    console.log(
      `| drone online again → the turn's output streaming again (no resume call) | ${cell(streamingAgain)} | < 2 000 |`,
    );
    console.log(
      `| the same, back after the grace (the turn interrupted meanwhile) | ${cell(streamingAfterGrace)} | < 2 000 |`,
    );
    console.log(
      `| baseline: a turn posted to the online, idle drone → its first output | ${cell(fresh)} | |`,
    );
    drone.kill("SIGKILL");
    drone = null;
    await model.close();
    await server.close();
  } finally {
    drone?.kill("SIGKILL");
    await Promise.all(services.map((service) => service.stop()));
    await rm(base, { recursive: true, force: true });
    if (remoteDirectory) await rm(remoteDirectory, { recursive: true, force: true });
  }
}

await main();
process.exit(0);
