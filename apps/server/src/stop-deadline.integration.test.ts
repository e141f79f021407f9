// A server process stopped while its Redis does not answer (frozen with SIGSTOP, as a host gone
// dark: no refusal, no reset): the graceful stop cannot finish, so after GADGET_STOP_TIMEOUT_MS it
// exits 1 and says which step it was stuck at, rather than hanging until something kills it.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { databaseUrl, type RestartableService, startRestartableRedis } from "@gadget/services";
import { processesWithArgument } from "@gadget/testkit";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { registerDrone, setupWorkspace, signup } from "./testing/api-client.ts";
import { ScriptedDrone } from "./testing/scripted-drone.ts";
import { type ServerProcess, startServerProcess } from "./testing/server-process.ts";

let base: string;
let redis: RestartableService;
let server: ServerProcess;
let drone: ScriptedDrone | undefined;
let frozen: number | undefined;

beforeAll(async () => {
  base = await mkdtemp(path.join(tmpdir(), "gadget-stop-deadline-"));
  redis = await startRestartableRedis(path.join(base, "redis"));
  server = await startServerProcess({
    MONGO_URL: databaseUrl(inject("mongoUrl"), `stop_deadline_${process.pid}`),
    REDIS_URL: redis.url,
    GADGET_STOP_TIMEOUT_MS: "3000",
    LOG_LEVEL: "error",
  });
});

afterAll(async () => {
  drone?.close();
  if (frozen) process.kill(frozen, "SIGCONT");
  await server?.stop("SIGKILL");
  await redis?.stop();
  if (base) await rm(base, { recursive: true, force: true });
});

describe("stopping a server whose Redis does not answer", () => {
  it("exits 1 after GADGET_STOP_TIMEOUT_MS, naming the step it was stuck at", async () => {
    // A user with a drone online: the stop has sockets to close and a queue worker to stop.
    const user = await signup(server.url, "stop");
    await setupWorkspace(user);
    const { droneId, credential } = await registerDrone(user);
    drone = await ScriptedDrone.connect({ url: server.url, droneId, credential });

    const [redisProcess] = processesWithArgument(path.join(base, "redis"));
    if (!redisProcess) throw new Error("the redis-server process was not found");
    process.kill(redisProcess, "SIGSTOP");
    frozen = redisProcess;
    const stopping = Date.now();
    const code = await server.stop("SIGTERM");
    const took = Date.now() - stopping;
    expect(code).toBe(1);
    // Where it waits depends on what was in flight: ending a sweep, closing the dispatch queue's
    // worker, or writing the drone's disconnect to presence; each needs Redis.
    expect(server.output()).toMatch(
      /stop still under way after 3000 ms \(at: (refusing new work|finishing dispatches|handling disconnects)\): exiting without finishing it/,
    );
    // The deadline ended it, not the test's own SIGKILL 15 s later.
    expect(took).toBeLessThan(12_000);
  }, 60_000);
});
