// A server process stopped while its database does not answer (frozen with SIGSTOP, as a host gone
// dark: no refusal, no reset): the graceful stop cannot finish, so after GADGET_STOP_TIMEOUT_MS it
// exits 1 and says which step it was stuck at, rather than hanging until something kills it.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  databaseUrl,
  findRepoRoot,
  type RestartableService,
  startRestartableMongo,
} from "@gadget/services";
import { processesWithArgument } from "@gadget/testkit";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { registerDrone, setupWorkspace, signup } from "./testing/api-client.ts";
import { ScriptedDrone } from "./testing/scripted-drone.ts";
import { type ServerProcess, startServerProcess } from "./testing/server-process.ts";

let base: string;
let mongo: RestartableService;
let server: ServerProcess;
let drone: ScriptedDrone | undefined;
let frozen: number | undefined;

beforeAll(async () => {
  base = await mkdtemp(path.join(tmpdir(), "gadget-stop-deadline-"));
  mongo = await startRestartableMongo(findRepoRoot(), path.join(base, "mongo"));
  server = await startServerProcess({
    MONGO_URL: databaseUrl(mongo.url, "stop_deadline"),
    REDIS_URL: inject("redisUrl"),
    GADGET_REDIS_PREFIX: `stop_deadline_${process.pid}`,
    GADGET_STOP_TIMEOUT_MS: "3000",
    LOG_LEVEL: "error",
  });
});

afterAll(async () => {
  drone?.close();
  if (frozen) process.kill(frozen, "SIGCONT");
  await server?.stop("SIGKILL");
  await mongo?.stop();
  if (base) await rm(base, { recursive: true, force: true });
});

describe("stopping a server whose database does not answer", () => {
  it("exits 1 after GADGET_STOP_TIMEOUT_MS, naming the step it was stuck at", async () => {
    const user = await signup(server.url, "stop");
    const workspace = await setupWorkspace(user);
    const { droneId, credential } = await registerDrone(user);
    drone = await ScriptedDrone.connect({ url: server.url, droneId, credential });
    const posted = await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
      prompt: "run while the database goes away",
      providerId: workspace.providerId,
    });
    expect(posted.status).toBe(202);
    await drone.nextWorkOrder();

    const [database] = processesWithArgument(new URL(mongo.url).host);
    if (!database) throw new Error("the database process was not found");
    process.kill(database, "SIGSTOP");
    frozen = database;
    const stopping = Date.now();
    const code = await server.stop("SIGTERM");
    const took = Date.now() - stopping;
    expect(code).toBe(1);
    expect(server.output()).toMatch(
      /stop still under way after 3000 ms \(at: handling disconnects\): exiting without finishing it/,
    );
    // The drone's disconnect waits to be written; the deadline ended it, not the test's own SIGKILL 15 s later.
    expect(took).toBeLessThan(12_000);
  }, 60_000);
});
