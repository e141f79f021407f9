// The live relay: events streamed by many turns at once, from the drone's emit to every
// browser following the turn, beside bare Socket.IO relays with and without a database write.
import { randomUUID } from "node:crypto";
import { monitorEventLoopDelay } from "node:perf_hooks";
import type { Database } from "@gadget/db";
import { agentEvent, type TurnEventsMessage } from "@gadget/protocol";
import { ms, now, percentile, pool, sleep } from "@gadget/testkit/measure";
import { IdeClient, ScriptedDrone, setupWorkspace, signup } from "@gadget/testkit/wire";
import { Types } from "mongoose";
import { io as connectClient, type Socket } from "socket.io-client";
import { bareSocketIo } from "./baselines.ts";
import { cpuNow, type Env, rows, seedDrones, startServer, watchedProcesses } from "./harness.ts";

/** "server 41 · database 30" ms of CPU per 1,000 events; "" when nothing is watched. */
function cpuPerThousand(result: RelayResult): string {
  return [...result.cpu]
    .map(([name, ms]) => `${name} ${((ms * 1000) / result.sent).toFixed(0)}`)
    .join(" · ");
}

export interface RelayLoad {
  turns: number;
  eventsPerSecond: number;
  seconds: number;
  batchIntervalMs: number;
  /**
   * Every turn sends at the same instant of each interval (the worst case: 100 batches at once),
   * instead of each at its own phase, as drones streaming independently do.
   */
  lockstep?: boolean;
  /**
   * Instead of the three runs: this many rounds of 100 turns starting, each measured for its
   * first `seconds` and then ended (how often the start-up tail misses, in one process).
   */
  starts?: number;
}

interface RelayResult {
  latencies: number[];
  /** CPU time (ms) each watched process used while the run sent and delivered. */
  cpu: Map<string, number>;
  /** This process's own event-loop delay during the run, ms: it reads as latency too. */
  loopDelay: { p99: number; max: number };
  sent: number;
  received: number;
  lost: number;
  duplicated: number;
  outOfOrder: number;
}

/** Drives the load: each turn sends a batch every interval; returns latencies measured at the browsers. */
async function driveRelay(
  load: RelayLoad,
  send: (turn: number, events: Array<{ text: string }>) => Promise<void>,
  received: () => Array<{ turn: number; seq: number; text: string; at: number }>,
  expectedSeqs: (turn: number, count: number) => number[],
): Promise<RelayResult> {
  const perBatch = Math.max(
    1,
    Math.round((load.eventsPerSecond * load.batchIntervalMs) / 1000 / load.turns),
  );
  const ticks = Math.round((load.seconds * 1000) / load.batchIntervalMs);
  const sentPerTurn = new Array<number>(load.turns).fill(0);
  const pending: Promise<void>[] = [];
  // The monotonic clock (µs) lines a run up with a server CPU profile's timestamps.
  console.error(`relay: sending at ${process.hrtime.bigint() / 1000n} µs`);
  const cpuBefore = cpuNow();
  // This process's own event-loop delay: a late callback here reads as latency too.
  const loopResolutionMs = 5;
  const loopDelay = monitorEventLoopDelay({ resolution: loopResolutionMs });
  loopDelay.enable();
  const started = now();
  for (let tick = 0; tick < ticks; tick++) {
    for (let turn = 0; turn < load.turns; turn++) {
      const phase = load.lockstep ? 0 : (turn * load.batchIntervalMs) / load.turns;
      const wait = started + tick * load.batchIntervalMs + phase - now();
      if (wait >= 1) await sleep(wait);
      const stamp = now();
      const events = Array.from({ length: perBatch }, () => ({ text: String(stamp) }));
      sentPerTurn[turn]! += perBatch;
      const sent = send(turn, events);
      // Failures are counted after the run; this keeps them from being unhandled meanwhile.
      sent.catch(() => undefined);
      pending.push(sent);
    }
  }
  const sendErrors = (await Promise.allSettled(pending)).filter(
    (result) => result.status === "rejected",
  );
  if (sendErrors.length > 0)
    console.error(
      `${sendErrors.length} batches failed, e.g.`,
      (sendErrors[0] as PromiseRejectedResult).reason,
    );
  console.error(`sent in ${((now() - started) / 1000).toFixed(1)} s`);
  const total = sentPerTurn.reduce((sum, count) => sum + count, 0);
  const deadline = now() + 20_000;
  while (received().length < total && now() < deadline) await sleep(50);
  const cpu = new Map(
    [...cpuNow()].map(([name, ms]) => [name, ms - (cpuBefore.get(name) ?? ms)] as const),
  );
  loopDelay.disable();
  // The histogram holds the time between its timer's ticks: the delay is what exceeds the tick.
  const ownDelay = {
    p99: Math.max(0, loopDelay.percentile(99) / 1e6 - loopResolutionMs),
    max: Math.max(0, loopDelay.max / 1e6 - loopResolutionMs),
  };
  await sleep(200);
  const all = received();
  const latencies = all.map((item) => item.at - Number(item.text));
  if (process.env.BENCH_BUCKETS) {
    // BENCH_BUCKETS=1: half-second buckets; a larger number is the bucket's length in ms.
    const bucketMs =
      Number(process.env.BENCH_BUCKETS) > 1 ? Number(process.env.BENCH_BUCKETS) : 500;
    const buckets = new Map<number, number[]>();
    for (const item of all) {
      const key = Math.floor((Number(item.text) - started) / bucketMs);
      buckets.set(key, [...(buckets.get(key) ?? []), item.at - Number(item.text)]);
    }
    for (const [key, values] of [...buckets].sort((a, b) => a[0] - b[0]))
      console.error(
        `  ${key * bucketMs} ms: p50 ${percentile(values, 50).toFixed(0)} p99 ${percentile(values, 99).toFixed(0)} n ${values.length}`,
      );
  }
  let lost = 0;
  let duplicated = 0;
  let outOfOrder = 0;
  for (let turn = 0; turn < load.turns; turn++) {
    const seqs = all.filter((item) => item.turn === turn).map((item) => item.seq);
    const expected = expectedSeqs(turn, sentPerTurn[turn]!);
    const seen = new Set(seqs);
    duplicated += seqs.length - seen.size;
    lost += expected.filter((seq) => !seen.has(seq)).length;
    for (let index = 1; index < seqs.length; index++)
      if (seqs[index]! <= seqs[index - 1]!) outOfOrder++;
  }
  return {
    latencies,
    cpu,
    loopDelay: ownDelay,
    sent: total,
    received: all.length,
    lost,
    duplicated,
    outOfOrder,
  };
}

export async function benchRelay(env: Env, load: RelayLoad) {
  console.error(
    `relay: ${load.turns} turns, ${load.eventsPerSecond} events/s for ${load.seconds} s`,
  );
  const { server, database, url } = await startServer(env, `relay_${randomUUID().slice(0, 6)}`);
  const drones: ScriptedDrone[] = [];
  const browsers: IdeClient[] = [];
  if (server.child.pid) watchedProcesses.set("server", server.child.pid);
  try {
    const user = await signup(url, "relay");
    const workspace = await setupWorkspace(user);
    const credentials = await seedDrones(database, user.userId, load.turns, "relay");
    drones.push(
      ...(await pool(credentials, 20, (credential) =>
        ScriptedDrone.connect({ url, ...credential, capacity: 1, heartbeatMs: 5_000 }),
      )),
    );
    await sleep(500);
    /** Posts `load.turns` turns, each in a new session, waits until each is dispatched, subscribes a browser to each. */
    const startTurns = async (label: string) => {
      const turnIds: string[] = [];
      for (let index = 0; index < load.turns; index++) {
        // A session per turn: a session's turns run one at a time (its queue), and these run at once.
        const session = await user.post(`/api/projects/${workspace.projectId}/sessions`, {
          name: `${label} ${index}`,
        });
        const posted = await user.post(`/api/sessions/${session.body.session._id}/turns`, {
          prompt: `${label} ${index}`,
          providerId: workspace.providerId,
        });
        turnIds.push(posted.body.turn._id);
      }
      const owner = new Map<string, ScriptedDrone>();
      const deadline = now() + 30_000;
      while (owner.size < load.turns && now() < deadline) {
        for (const drone of drones)
          for (const order of drone.workOrders)
            if (drone.running.has(order.turnId)) owner.set(order.turnId, drone);
        await sleep(50);
      }
      if (owner.size < load.turns) throw new Error(`only ${owner.size} turns dispatched`);
      const turnIndex = new Map(turnIds.map((id, index) => [id, index]));
      const receivedEvents: Array<{ turn: number; seq: number; text: string; at: number }> = [];
      const watchers: IdeClient[] = [];
      for (const turnId of turnIds) {
        const browser = await IdeClient.connect(url, user.token!);
        watchers.push(browser);
        browsers.push(browser);
        const firstSeq = owner.get(turnId)!.running.get(turnId)!;
        browser.socket.on("turn_events", (message: TurnEventsMessage) => {
          const at = now();
          for (const event of message.events) {
            if (event.type !== "token") continue;
            receivedEvents.push({
              turn: turnIndex.get(message.turnId)!,
              seq: event.seq,
              text: event.data.text,
              at,
            });
          }
        });
        await browser.subscribe({ turnId, after: firstSeq - 1 });
      }
      const sendTokens = async (turn: number, events: Array<{ text: string }>) => {
        const turnId = turnIds[turn]!;
        const answer = await owner.get(turnId)!.stream(
          turnId,
          events.map((event) => agentEvent("token", event)),
        );
        if (!answer.ok) throw new Error(`batch refused: ${answer.error.message}`);
      };
      return {
        run: async (shape: RelayLoad) => {
          receivedEvents.length = 0;
          const firstSeqs = turnIds.map((turnId) => owner.get(turnId)!.running.get(turnId)!);
          return driveRelay(
            shape,
            sendTokens,
            () => receivedEvents,
            (turn, count) => Array.from({ length: count }, (_, index) => firstSeqs[turn]! + index),
          );
        },
        /** Ends every turn (frees the drones) and closes its browsers. */
        finish: async () => {
          await Promise.all(
            turnIds.map((turnId) =>
              owner
                .get(turnId)!
                .stream(turnId, [
                  agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }),
                ]),
            ),
          );
          for (const browser of watchers) browser.close();
          await sleep(1_000);
        },
      };
    };
    // A server that has been running a while: one round of turns streams and ends first, so the
    // measured turns do not also pay for the process's first (unoptimised) pass over this code.
    const warmUp = await startTurns("warm-up");
    await warmUp.run({ ...load, seconds: 2 });
    await warmUp.finish();
    if (load.starts) {
      const rounds: RelayResult[] = [];
      for (let round = 0; round < load.starts; round++) {
        const turns = await startTurns(`start ${round}`);
        const result = await turns.run(load);
        await turns.finish();
        rounds.push(result);
        console.error(
          `relay: round ${round}: p50 ${ms(percentile(result.latencies, 50))} p99 ${ms(percentile(result.latencies, 99))} lost ${result.lost} duplicated ${result.duplicated}; CPU per 1,000 events ${cpuPerThousand(result)} ms; own event-loop delay p99 ${ms(result.loopDelay.p99)}`,
        );
      }
      watchedProcesses.delete("server");
      for (const browser of browsers) browser.close();
      for (const drone of drones) drone.close();
      await sleep(1_000);
      const storedFirst = await baselineRelay(load, database);
      rows.push({
        benchmark: `Live relay, ${load.eventsPerSecond} events/s over ${load.turns} turns starting together, ${load.starts} rounds of ${load.seconds} s in one server`,
        measure: "p99 per round",
        gadget: rounds.map((round) => ms(percentile(round.latencies, 99))).join(", "),
        baseline: `${ms(percentile(storedFirst.latencies, 99))} bare + stored first in the database`,
        target: "< 50 ms",
      });
      return;
    }
    const { run } = await startTurns("relay");
    // First all 100 turns start streaming within one interval (each one's first events move it
    // to `processing`: 100 turn writes beside the inserts); then the same turns again, running;
    // then running in lockstep, every turn's batch at the same instant.
    const lockstep = { ...load, lockstep: true };
    const result = await run(load);
    await sleep(3_000);
    const running = await run(load);
    await sleep(3_000);
    const together = await run(lockstep);

    watchedProcesses.delete("server");
    for (const browser of browsers) browser.close();
    for (const drone of drones) drone.close();
    await sleep(1_000);
    console.error("relay: baselines");
    const baseline = await baselineRelay(load);
    const storedFirst = await baselineRelay(load, database);
    const store = await baselineStore(database, load);
    const storedFirstLockstep = await baselineRelay(lockstep, database);
    const storeLockstep = await baselineStore(database, lockstep);
    const both = (pick: (result: RelayResult) => string) =>
      `${pick(baseline)} bare Socket.IO; ${pick(storedFirst)} bare + stored first in the database`;
    rows.push(
      {
        benchmark: `Live relay, ${load.eventsPerSecond} events/s over ${load.turns} turns starting together, each sending every ${load.batchIntervalMs} ms at its own phase (drone emit → browser, stored first)`,
        measure: "p50",
        gadget: ms(percentile(result.latencies, 50)),
        baseline: both((item) => ms(percentile(item.latencies, 50))),
        target: "",
      },
      {
        benchmark: "",
        measure: "p99",
        gadget: ms(percentile(result.latencies, 99)),
        baseline: both((item) => ms(percentile(item.latencies, 99))),
        target: "< 50 ms",
      },
      {
        benchmark: "",
        measure: "lost / duplicated / out of order",
        gadget: `${result.lost} / ${result.duplicated} / ${result.outOfOrder} (of ${result.sent})`,
        baseline: both((item) => `${item.lost} / ${item.duplicated} / ${item.outOfOrder}`),
        target: "0 / 0",
      },
      {
        benchmark: "",
        measure: "CPU per 1,000 events, ms",
        gadget: cpuPerThousand(result),
        baseline: `${cpuPerThousand(storedFirst)} bare + stored first (its relay runs in the benchmark's process)`,
        target: "",
      },
      {
        benchmark: "",
        measure: "the benchmark's own event-loop delay p99 / max (part of every latency above)",
        gadget: `${ms(result.loopDelay.p99)} / ${ms(result.loopDelay.max)}`,
        baseline: `${ms(storedFirst.loopDelay.p99)} / ${ms(storedFirst.loopDelay.max)} bare + stored first`,
        target: "",
      },
      {
        benchmark: "Same load again, the 100 turns already streaming (no turn starts during it)",
        measure: "p50 / p99",
        gadget: `${ms(percentile(running.latencies, 50))} / ${ms(percentile(running.latencies, 99))}`,
        baseline: "",
        target: "",
      },
      {
        benchmark: "",
        measure: "lost / duplicated / out of order",
        gadget: `${running.lost} / ${running.duplicated} / ${running.outOfOrder} (of ${running.sent})`,
        baseline: "",
        target: "0 / 0",
      },
      {
        benchmark: "",
        measure: "CPU per 1,000 events, ms",
        gadget: cpuPerThousand(running),
        baseline: "",
        target: "",
      },
      {
        benchmark: "",
        measure: "the benchmark's own event-loop delay p99 / max",
        gadget: `${ms(running.loopDelay.p99)} / ${ms(running.loopDelay.max)}`,
        baseline: "",
        target: "",
      },
      {
        benchmark:
          "Raw store, same load: the events straight into the database (unique {turn, seq} index), one insertMany in flight, later batches grouped behind it (emit → stored, nothing relayed)",
        measure: "p50 / p99",
        gadget: "—",
        baseline: `${ms(percentile(store.latencies, 50))} / ${ms(percentile(store.latencies, 99))} (${store.throughput.toFixed(0)} events/s stored while the load ran)`,
        target: "",
      },
      {
        benchmark: `Same turns running in lockstep: all ${load.turns} batches of each interval sent at the same instant (the worst case)`,
        measure: "p50 / p99",
        gadget: `${ms(percentile(together.latencies, 50))} / ${ms(percentile(together.latencies, 99))}`,
        baseline: `${ms(percentile(storedFirstLockstep.latencies, 50))} / ${ms(percentile(storedFirstLockstep.latencies, 99))} bare + stored first; raw store ${ms(percentile(storeLockstep.latencies, 50))} / ${ms(percentile(storeLockstep.latencies, 99))}`,
        target: "",
      },
      {
        benchmark: "",
        measure: "lost / duplicated / out of order",
        gadget: `${together.lost} / ${together.duplicated} / ${together.outOfOrder} (of ${together.sent})`,
        baseline: `${storedFirstLockstep.lost} / ${storedFirstLockstep.duplicated} / ${storedFirstLockstep.outOfOrder}`,
        target: "0 / 0",
      },
    );
  } finally {
    watchedProcesses.delete("server");
    for (const browser of browsers) browser.close();
    for (const drone of drones) drone.close();
    await server.stop();
    await database.connection.dropDatabase();
    await database.close();
  }
}

/**
 * The same load through a bare Socket.IO server: drone batch in, one emit per event to the
 * browser room. With `database`, each batch is first stored through `groupWriter` (stored first,
 * as gadget-code does) and acknowledged once stored.
 */
async function baselineRelay(load: RelayLoad, database?: Database): Promise<RelayResult> {
  const bare = await bareSocketIo();
  const events = database ? await scratchEvents(database) : null;
  bare.io.of("/ide").on("connection", (socket) => {
    socket.on("subscribe", (turn: number, ack: () => void) => {
      socket.join(`turn:${turn}`);
      ack();
    });
  });
  const nextSeq = new Array<number>(load.turns).fill(1);
  bare.io.of("/drones").on("connection", (socket) => {
    socket.on(
      "turn_events",
      (
        batch: { turn: number; events: Array<{ text: string }> },
        ack: (answer: unknown) => void,
      ) => {
        const numbered = batch.events.map((event) => ({
          seq: nextSeq[batch.turn]!++,
          text: event.text,
        }));
        const relay = () => {
          bare.io
            .of("/ide")
            .to(`turn:${batch.turn}`)
            .emit("turn_events", { turn: batch.turn, events: numbered });
          ack({ ok: true });
        };
        if (!events) return relay();
        events
          .write(numbered.map(({ seq, text }) => events.document(batch.turn, seq, text)))
          .then(relay, (error: unknown) => ack({ ok: false, error: String(error) }));
      },
    );
  });
  const sockets: Socket[] = [];
  const received: Array<{ turn: number; seq: number; text: string; at: number }> = [];
  const droneSockets: Socket[] = [];
  for (let turn = 0; turn < load.turns; turn++) {
    const browser = connectClient(`${bare.url}/ide`, { transports: ["websocket"], forceNew: true });
    browser.on(
      "turn_events",
      (message: { turn: number; events: Array<{ seq: number; text: string }> }) => {
        const at = now();
        for (const { seq, text } of message.events)
          received.push({ turn: message.turn, seq, text, at });
      },
    );
    await new Promise<void>((resolve) => browser.once("connect", () => resolve()));
    await browser.timeout(5000).emitWithAck("subscribe", turn);
    sockets.push(browser);
    const drone = connectClient(`${bare.url}/drones`, {
      transports: ["websocket"],
      forceNew: true,
    });
    await new Promise<void>((resolve) => drone.once("connect", () => resolve()));
    droneSockets.push(drone);
  }
  const result = await driveRelay(
    load,
    async (turn, events) => {
      await droneSockets[turn]!.timeout(10_000).emitWithAck("turn_events", { turn, events });
    },
    () => received,
    (_turn, count) => Array.from({ length: count }, (_, index) => index + 1),
  );
  for (const socket of [...sockets, ...droneSockets]) socket.close();
  await bare.close();
  await events?.drop();
  return result;
}

type Collection = ReturnType<Database["connection"]["collection"]>;

/**
 * Stores documents the way the server's writer does: one insertMany in flight, everything that
 * arrives meanwhile grouped behind it. Resolves each call once its documents are stored.
 */
function groupWriter(collection: Collection) {
  type Pending = { documents: Array<Record<string, unknown>>; done: (error?: unknown) => void };
  let queue: Pending[] = [];
  let writing = false;
  const pump = async () => {
    if (writing) return;
    writing = true;
    while (queue.length > 0) {
      const group = queue;
      queue = [];
      try {
        await collection.insertMany(
          group.flatMap((pending) => pending.documents),
          { ordered: false },
        );
        for (const pending of group) pending.done();
      } catch (error) {
        for (const pending of group) pending.done(error);
      }
    }
    writing = false;
  };
  return (documents: Array<Record<string, unknown>>) =>
    new Promise<void>((resolve, reject) => {
      queue.push({ documents, done: (error) => (error ? reject(error) : resolve()) });
      void pump();
    });
}

/** A scratch copy of the events collection: same unique index, dropped by `drop()`. */
async function scratchEvents(database: Database) {
  const collection = database.connection.collection(`bench_raw_events_${randomUUID().slice(0, 6)}`);
  await collection.createIndex({ turn: 1, seq: 1 }, { unique: true });
  const turns = new Map<number, Types.ObjectId>();
  return {
    write: groupWriter(collection),
    /** The stored form of one event of bench turn `turn`. */
    document(turn: number, seq: number, text: string): Record<string, unknown> {
      let id = turns.get(turn);
      if (!id) {
        id = new Types.ObjectId();
        turns.set(turn, id);
      }
      return { turn: id, seq, type: "token", data: { text }, at: new Date() };
    },
    drop: () => collection.drop(),
  };
}

/**
 * The relay's load written straight to the database through `groupWriter`, timed from emit to
 * stored: what the database alone takes to store this load, nothing relayed.
 */
async function baselineStore(
  database: Database,
  load: RelayLoad,
): Promise<RelayResult & { throughput: number }> {
  const events = await scratchEvents(database);
  const nextSeq = new Array<number>(load.turns).fill(1);
  const stored: Array<{ turn: number; seq: number; text: string; at: number }> = [];
  const started = now();
  const result = await driveRelay(
    load,
    async (turn, batch) => {
      const documents = batch.map((event) => events.document(turn, nextSeq[turn]!++, event.text));
      await events.write(documents);
      const at = now();
      for (const document of documents) {
        stored.push({
          turn,
          seq: document.seq as number,
          text: (document.data as { text: string }).text,
          at,
        });
      }
    },
    () => stored,
    (_turn, count) => Array.from({ length: count }, (_, index) => index + 1),
  );
  const seconds = (Math.max(...stored.map((item) => item.at)) - started) / 1000;
  await events.drop();
  return { ...result, throughput: stored.length / seconds };
}
