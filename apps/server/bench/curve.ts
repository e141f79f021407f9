// The cost curve: simulated drones and browsers (ScriptedDrone, IdeClient: the real wire, no
// agent) at several fleet sizes over 1, 2 or 4 server processes sharing one Redis and one
// database. Per point: dispatch p50/p99 (POST turn → work order, 10 drones per owner), relay p99
// of a fixed event rate while the fleet idles, RSS per connection, Redis commands per heartbeat
// and per event (INFO commandstats deltas), database operations per event (count-operations.ts in
// each server). Decision 0055 says how it is simulated and what it leaves out.
import { randomUUID } from "node:crypto";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { agentEvent, type TurnEventsMessage } from "@gadget/protocol";
import { now, percentile, pool, rssMb, sleep } from "@gadget/testkit/measure";
import { IdeClient, ScriptedDrone, setupWorkspace, signup } from "@gadget/testkit/wire";
import { Redis } from "ioredis";
import { Types } from "mongoose";
import type { ServerProcess } from "../src/testing/server-process.ts";
import { cpuSeconds, type Fleet, openFiles, startFleet, watchPeakRss } from "./curve-fleet.ts";
import { type Env, seedDrones, startServer, watchedProcesses } from "./harness.ts";

export interface CurvePoint {
  drones: number;
  browsers: number;
  processes: number;
  connectSeconds: number;
  /** The slowest fleet process's seconds for its drones, then its browsers. */
  droneConnectSeconds: number;
  browserConnectSeconds: number;
  /** Processes holding the idle fleet (each at most 5,000 sockets). */
  fleetProcesses: number;
  /** Fleet handshakes tried again after Socket.IO's 20 s timeout. */
  connectRetries: number;
  /** CPU seconds spent while connecting: servers, fleet, Redis, database. */
  connectCpuSeconds: Record<string, number>;
  /** Peak summed RSS (MiB) over the point: servers, Redis, database, fleet. */
  peakRssMb: Record<string, number>;
  dispatchP50: number;
  dispatchP99: number;
  relayP99: number;
  relayP50: number;
  eventsPerSecond: number;
  lost: number;
  rssPerConnectionKb: number;
  redisPerHeartbeat: number;
  redisPerEvent: number;
  databasePerEvent: number;
  /** The relay window's database operations per event by driver method (its silent rest not subtracted). */
  relayDatabaseByMethod: Record<string, number>;
  /** Drone batches sent in the relay window (each `perBatch` events). */
  relayBatches: number;
  databasePerHeartbeat: number;
}

const heartbeatMs = 5_000;
const dronesPerOwner = 10;
/** Turns streaming during the relay window, each watched by one browser on another process. */
const streamingTurns = 20;
const relayEventsPerSecond = 400;
const relaySeconds = 5;
const quietSeconds = 6;
const dispatchSamples = 40;
const here = path.dirname(fileURLToPath(import.meta.url));

/** Total calls of every Redis command but INFO (this bench's own), from INFO commandstats. */
async function redisCalls(redis: Redis): Promise<number> {
  const info = await redis.info("commandstats");
  let total = 0;
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
    if (match[1] !== "info") total += Number(match[2]);
  return total;
}

/** Database operations the servers sent so far (count-operations.ts files), by driver method. */
async function operationsByMethod(directory: string): Promise<Record<string, number>> {
  await sleep(400);
  const byMethod: Record<string, number> = {};
  for (const file of await readdir(directory)) {
    if (!file.endsWith(".json")) continue;
    const counts = JSON.parse(await readFile(path.join(directory, file), "utf8"));
    for (const [method, value] of Object.entries(counts))
      byMethod[method] = (byMethod[method] ?? 0) + (value as number);
  }
  return byMethod;
}

/** Database operations the servers sent so far, all methods. */
async function databaseOperations(directory: string): Promise<number> {
  return Object.values(await operationsByMethod(directory)).reduce((sum, count) => sum + count, 0);
}

async function totalRss(servers: ServerProcess[]): Promise<number> {
  let total = 0;
  for (const server of servers) total += await rssMb(server.child.pid!);
  return total;
}

/** One point of the curve: `drones` drones and as many browsers over `processes` servers. */
export async function measurePoint(
  env: Env,
  drones: number,
  processes: number,
): Promise<CurvePoint> {
  const shared = `curve_${drones}_${processes}_${randomUUID().slice(0, 6)}`;
  const countsDir = await mkdtemp(path.join(tmpdir(), "gadget-curve-"));
  console.error(`curve: ${drones} drones + ${drones} browsers over ${processes} process(es)`);
  const started = await Promise.all(
    Array.from({ length: processes }, (_, index) =>
      startServer(
        env,
        `${shared}_${index}`,
        { BENCH_COUNTS_DIR: countsDir },
        {
          shared,
          nodeArgs: ["--import", "tsx", "--import", path.join(here, "count-operations.ts")],
        },
      ),
    ),
  );
  const servers = started.map((item) => item.server);
  const urls = servers.map((server) => server.url);
  const { database } = started[0]!;
  const redis = new Redis(env.redisUrl);
  const droneClients: ScriptedDrone[] = [];
  const browsers: IdeClient[] = [];
  let fleet: Fleet | null = null;
  const service = (name: string) => {
    const pid = watchedProcesses.get(name);
    return pid ? [pid] : [];
  };
  const groups = () => ({
    servers: servers.map((server) => server.child.pid!),
    redis: service("redis"),
    database: service("database"),
    fleet: [process.pid, ...(fleet?.pids ?? [])],
  });
  const peakRss = watchPeakRss(groups);
  try {
    // Ten owners with workspaces post the measured turns; the rest of the fleet belongs to owners
    // that exist only as ids (a drone's handshake reads the drone, not its owner).
    const owners = await Promise.all(
      Array.from({ length: 10 }, (_, index) => signup(urls[index % processes]!, `owner${index}`)),
    );
    const workspaces = await Promise.all(owners.map((owner) => setupWorkspace(owner)));
    const watcher = await signup(urls[0]!, "watcher");
    const watched = await setupWorkspace(watcher);
    const idleTurns: string[] = [];
    for (let index = 0; index < 20; index++) {
      const session = await watcher.post(`/api/projects/${watched.projectId}/sessions`, {
        name: `idle ${index}`,
      });
      const posted = await watcher.post(`/api/sessions/${session.body.session._id}/turns`, {
        prompt: `idle ${index}`,
        providerId: watched.providerId,
      });
      idleTurns.push(posted.body.turn._id);
      // Ended at once: a queued turn would be enqueued again by every sweep (background noise).
      await watcher.post(`/api/turns/${posted.body.turn._id}/cancel`, {});
    }
    await sleep(1_000);
    const idleRss = await totalRss(servers);
    const quietStart = await redisCalls(redis);
    const quietDatabaseStart = await databaseOperations(countsDir);
    await sleep(quietSeconds * 1_000);
    const background = (await redisCalls(redis)) - quietStart;
    const backgroundDatabase = (await databaseOperations(countsDir)) - quietDatabaseStart;

    const credentials: Array<{ droneId: string; credential: string; owner: number }> = [];
    for (let owner = 0; owner * dronesPerOwner < drones; owner++) {
      const userId = owner < owners.length ? owners[owner]!.userId : String(new Types.ObjectId());
      const seeded = await seedDrones(database, userId, dronesPerOwner, `o${owner}`);
      credentials.push(...seeded.map((item) => ({ ...item, owner })));
    }
    const dispatchedAt = new Map<string, (at: number, droneId: string) => void>();
    /** Which process each drone is connected to, by drone id. */
    const droneServer = new Map<string, number>();
    // The measured owners' drones (the first ten owners) in this process, as their work orders
    // and events are timed here; the rest of the fleet and the idle browsers in child processes.
    const measured = credentials.slice(0, owners.length * dronesPerOwner);
    const connectStarted = now();
    const cpuBefore = cpuSeconds(groups());
    droneClients.push(
      ...(await pool(measured, 50, (credential, index) => {
        droneServer.set(credential.droneId, index % processes);
        return ScriptedDrone.connect({
          url: urls[index % processes]!,
          droneId: credential.droneId,
          credential: credential.credential,
          capacity: 8,
          heartbeatMs,
          onWorkOrder: (order) => {
            dispatchedAt.get(order.prompt)?.(now(), credential.droneId);
            return { ok: true };
          },
        });
      })),
    );
    fleet = await startFleet({
      drones: credentials.slice(measured.length).map((credential, index) => ({
        url: urls[(measured.length + index) % processes]!,
        droneId: credential.droneId,
        credential: credential.credential,
      })),
      browsers: Array.from({ length: drones }, (_, index) => ({
        url: urls[index % processes]!,
        token: watcher.token!,
        turnId: idleTurns[index % idleTurns.length]!,
      })),
      heartbeatMs,
    }).catch(async (error: Error) => {
      // Where it stopped: how many files each server held then (its sockets among them).
      const held = await Promise.all(servers.map((server) => openFiles(server.child.pid!)));
      throw new Error(`${error.message} (servers' open files then: ${held.join(", ")})`);
    });
    const connectSeconds = (now() - connectStarted) / 1000;
    const cpuAfter = cpuSeconds(groups());
    const connectCpuSeconds = Object.fromEntries(
      Object.entries(cpuAfter).map(([name, used]) => [
        name,
        Math.round((used - (cpuBefore[name] ?? 0)) * 10) / 10,
      ]),
    );
    console.error(
      `curve: connected in ${connectSeconds.toFixed(1)} s (fleet drones ${fleet.droneSeconds.toFixed(1)} s, browsers ${fleet.browserSeconds.toFixed(1)} s over ${fleet.pids.length} process(es), ${fleet.retries} retried; CPU s ${JSON.stringify(connectCpuSeconds)})`,
    );
    await sleep(3_000);
    const loadedRss = await totalRss(servers);

    // Heartbeats: the fleet idles for a while; what Redis did beyond the servers' own background.
    const heartbeatStart = await redisCalls(redis);
    const heartbeatDatabaseStart = await databaseOperations(countsDir);
    const heartbeatClock = now();
    await sleep(quietSeconds * 1_000);
    const heartbeatSeconds = (now() - heartbeatClock) / 1000;
    const heartbeatCalls = (await redisCalls(redis)) - heartbeatStart;
    const heartbeatDatabase = (await databaseOperations(countsDir)) - heartbeatDatabaseStart;
    const backgroundPerSecond = background / quietSeconds;
    const heartbeats = (drones * heartbeatSeconds * 1000) / heartbeatMs;
    const redisPerHeartbeat =
      (heartbeatCalls - backgroundPerSecond * heartbeatSeconds) / Math.max(1, heartbeats);

    console.error("curve: heartbeats measured; dispatching");
    // Dispatch: a turn in a new session of owner i (its 10 drones), posted to process i % P.
    const sessions = await Promise.all(
      Array.from({ length: dispatchSamples + streamingTurns }, (_, index) =>
        owners[index % owners.length]!.post(
          `/api/projects/${workspaces[index % owners.length]!.projectId}/sessions`,
          { name: `curve ${index}` },
        ),
      ),
    );
    const latencies: number[] = [];
    const streams: Array<{ turnId: string; drone: ScriptedDrone }> = [];
    for (let index = 0; index < sessions.length; index++) {
      const owner = index % owners.length;
      const prompt = `curve ${index} ${randomUUID()}`;
      const arrived = new Promise<{ at: number; droneId: string }>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("work order did not arrive")), 30_000);
        dispatchedAt.set(prompt, (at, droneId) => {
          clearTimeout(timer);
          resolve({ at, droneId });
        });
      });
      const client = owners[owner]!;
      const start = now();
      const posted = await fetch(
        `${urls[index % processes]}/api/sessions/${sessions[index]!.body.session._id}/turns`,
        {
          method: "POST",
          headers: { authorization: `Bearer ${client.token}`, "content-type": "application/json" },
          body: JSON.stringify({ prompt, providerId: workspaces[owner]!.providerId }),
        },
      );
      if (posted.status !== 202) throw new Error(`POST turn: ${posted.status}`);
      const turnId = ((await posted.json()) as { turn: { _id: string } }).turn._id;
      const { at, droneId } = await arrived;
      dispatchedAt.delete(prompt);
      if (index < dispatchSamples) latencies.push(at - start);
      else {
        const drone = droneClients.find((item) => item.options.droneId === droneId);
        if (!drone) throw new Error("no drone holds the turn");
        streams.push({ turnId, drone });
      }
    }

    // Relay: a fixed rate over `streamingTurns` turns, each watched on another process than its
    // drone's, while the whole fleet and its browsers stay connected.
    const received: number[] = [];
    const expected = new Map<string, number>();
    for (const [index, stream] of streams.entries()) {
      const droneProcess = droneServer.get(stream.drone.options.droneId)!;
      const browser = await IdeClient.connect(
        urls[(droneProcess + 1) % processes]!,
        owners[(dispatchSamples + index) % owners.length]!.token!,
      );
      browsers.push(browser);
      browser.socket.on("turn_events", (message: TurnEventsMessage) => {
        const at = now();
        for (const event of message.events)
          if (event.type === "token") received.push(at - Number(event.data.text));
      });
      await browser.subscribe({ turnId: stream.turnId, after: 0 });
    }
    console.error("curve: relaying");
    const perBatch = Math.max(1, Math.round(relayEventsPerSecond / 10 / streams.length));
    const ticks = relaySeconds * 10;
    // What the servers do in as long with these turns running but silent: subtracted below.
    const restRedisStart = await redisCalls(redis);
    const restDatabaseStart = await databaseOperations(countsDir);
    const restClock = now();
    await sleep(relaySeconds * 1_000);
    const restSeconds = (now() - restClock) / 1000;
    const restRedisPerSecond = ((await redisCalls(redis)) - restRedisStart) / restSeconds;
    const restDatabasePerSecond =
      ((await databaseOperations(countsDir)) - restDatabaseStart) / restSeconds;
    const relayRedisStart = await redisCalls(redis);
    const relayMethodsStart = await operationsByMethod(countsDir);
    const relayDatabaseStart = Object.values(relayMethodsStart).reduce((sum, n) => sum + n, 0);
    const relayClock = now();
    const sends: Promise<unknown>[] = [];
    for (let tick = 0; tick < ticks; tick++) {
      for (const [index, stream] of streams.entries()) {
        const wait = relayClock + tick * 100 + (index * 100) / streams.length - now();
        if (wait >= 1) await sleep(wait);
        const stamp = String(now());
        const events = Array.from({ length: perBatch }, () => agentEvent("token", { text: stamp }));
        expected.set(stream.turnId, (expected.get(stream.turnId) ?? 0) + perBatch);
        sends.push(stream.drone.stream(stream.turnId, events).catch(() => undefined));
      }
    }
    await Promise.all(sends);
    const sent = [...expected.values()].reduce((sum, count) => sum + count, 0);
    const lostSocket = fleet.dropped();
    if (lostSocket) throw new Error(`${lostSocket}, before the point was measured`);
    const deadline = now() + 30_000;
    while (received.length < sent && now() < deadline) await sleep(50);
    const relayWindow = (now() - relayClock) / 1000;
    const relayCalls = (await redisCalls(redis)) - relayRedisStart;
    const relayMethods = await operationsByMethod(countsDir);
    const relayDatabase =
      Object.values(relayMethods).reduce((sum, n) => sum + n, 0) - relayDatabaseStart;
    // Redis and database work beyond what the same servers did in as long with the turns silent.
    const eventsPerSecond = sent / ((ticks * 100) / 1000);
    return {
      drones,
      browsers: drones,
      processes,
      connectSeconds,
      droneConnectSeconds: fleet.droneSeconds,
      browserConnectSeconds: fleet.browserSeconds,
      fleetProcesses: fleet.pids.length,
      connectRetries: fleet.retries,
      connectCpuSeconds,
      peakRssMb: await peakRss.stop(),
      dispatchP50: percentile(latencies, 50),
      dispatchP99: percentile(latencies, 99),
      relayP50: percentile(received, 50),
      relayP99: percentile(received, 99),
      eventsPerSecond,
      lost: sent - received.length,
      rssPerConnectionKb: ((loadedRss - idleRss) * 1024) / (2 * drones),
      redisPerHeartbeat,
      redisPerEvent: (relayCalls - restRedisPerSecond * relayWindow) / sent,
      databasePerEvent: (relayDatabase - restDatabasePerSecond * relayWindow) / sent,
      relayDatabaseByMethod: Object.fromEntries(
        Object.entries(relayMethods)
          .map(([method, count]) => [method, (count - (relayMethodsStart[method] ?? 0)) / sent])
          .filter(([, perEvent]) => perEvent !== 0),
      ),
      relayBatches: ticks * streams.length,
      databasePerHeartbeat:
        (heartbeatDatabase - (backgroundDatabase / quietSeconds) * heartbeatSeconds) /
        Math.max(1, heartbeats),
    };
  } finally {
    await peakRss.stop();
    await fleet?.close();
    for (const client of browsers) client.close();
    for (const drone of droneClients) drone.close();
    redis.disconnect();
    await Promise.all(servers.map((server) => server.stop()));
    await database.connection.dropDatabase().catch(() => undefined);
    await Promise.all(started.map((item) => item.database.close()));
    await rm(countsDir, { recursive: true, force: true });
  }
}
