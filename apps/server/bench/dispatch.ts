// Dispatch: how long a turn takes from `POST /api/sessions/:id/turns` to a drone's work order,
// with 100 drones online, beside the database's floor and the raw baselines. With a build before
// a change (BENCH_BEFORE_SERVER), both servers run at once with their own 100 drones and take
// turns sample by sample with the floors, so every figure shares the machine's load of the moment.
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Database } from "@gadget/db";
import { ms, now, percentile, pool, sleep } from "@gadget/testkit/measure";
import { type ApiClient, ScriptedDrone, setupWorkspace, signup } from "@gadget/testkit/wire";
import { Types } from "mongoose";
import { sha256 } from "../src/crypto/tokens.ts";
import type { ServerProcess } from "../src/testing/server-process.ts";
import { baselineBullmq, baselineEmitWithAck } from "./baselines.ts";
import { type ExplainedSample, explainDispatch, readCommandLog } from "./explain.ts";
import { cpuMs, type Env, rows, seedDrones, startServer } from "./harness.ts";

/** How long after a work order its dispatch's commands are looked for (`explain`). */
const explainTailMs = 150;

/** One server under measurement, with its users, workspaces and drones. */
interface Subject {
  /** Named in the rows: "" for this build, "before" (then "before 2"…) for BENCH_BEFORE_SERVER's. */
  name: string;
  server: ServerProcess;
  database: Database;
  users: Array<ApiClient & { userId: string }>;
  workspaces: Array<{ projectId: string; sessionId: string; providerId: string }>;
  drones: ScriptedDrone[];
  /** Work orders awaited, by prompt. */
  waiters: Map<string, (at: number) => void>;
  /** The server's command log (explain), or null. */
  commandLog: string | null;
  latencies: number[];
  labelled: number[];
  marks: ExplainedSample[];
  /** The server process's CPU time (ms) over the measured samples (a negative start first). */
  cpu: number;
}

async function startSubject(
  env: Env,
  name: string,
  options: { serverDirectory?: string; labelSets: number; explain: boolean },
): Promise<Subject> {
  const { labelSets } = options;
  console.error(
    `dispatch${name ? ` (${name})` : ""}: starting server and 100 drones${labelSets ? ` of ${labelSets} label sets` : ""}`,
  );
  const commandLog = options.explain
    ? await mkdtemp(path.join(tmpdir(), "gadget-commands-"))
    : null;
  const here = path.dirname(fileURLToPath(import.meta.url));
  const { server, database, url } = await startServer(
    env,
    `dispatch_${randomUUID().slice(0, 6)}`,
    commandLog ? { BENCH_COMMAND_LOG: commandLog } : {},
    {
      serverDirectory: options.serverDirectory,
      nodeArgs: commandLog
        ? ["--import", "tsx", "--import", path.join(here, "command-log.ts")]
        : [],
    },
  );
  const subject: Subject = {
    name,
    server,
    database,
    users: [],
    workspaces: [],
    drones: [],
    waiters: new Map(),
    commandLog,
    latencies: [],
    labelled: [],
    marks: [],
    cpu: 0,
  };
  subject.users = await Promise.all(
    Array.from({ length: 10 }, (_, index) => signup(url, `bench${index}`)),
  );
  subject.workspaces = await Promise.all(
    subject.users.map((user) =>
      options.serverDirectory ? setupWorkspaceUnchecked(user) : setupWorkspace(user),
    ),
  );
  for (const [index, user] of subject.users.entries()) {
    const credentials = await seedDrones(database, user.userId, 10, `u${index}`);
    const connected = await pool(credentials, 10, (credential) =>
      ScriptedDrone.connect({
        url,
        ...credential,
        capacity: 8,
        heartbeatMs: 5_000,
        ...(labelSets
          ? {
              labels: [
                `pool=p${credentials.indexOf(credential) % labelSets}`,
                "os=linux",
                "arch=x64",
              ],
            }
          : {}),
        onWorkOrder: (order) => {
          subject.waiters.get(order.prompt)?.(now());
          return { ok: true };
        },
      }),
    );
    subject.drones.push(...connected);
  }
  return subject;
}

/**
 * setupWorkspace without the contract's check of the answers: a build from before a field was
 * added to the contract (BENCH_BEFORE_SERVER at 62e8286, before `envKeys`) answers without it.
 */
async function setupWorkspaceUnchecked(user: ApiClient) {
  const created = async (route: string, body: object) => {
    const answer = await user.post(route, body);
    if (answer.status !== 201) throw new Error(`POST ${route}: ${answer.status}`);
    return answer.body;
  };
  const { provider } = await created("/api/providers", {
    name: "scripted",
    baseUrl: "http://127.0.0.1:9/v1",
    apiKey: "sk-test-secret-key",
    modelId: "scripted-model",
  });
  const { project } = await created("/api/projects", {
    name: "Demo Project",
    gitUrl: "https://example.com/demo.git",
  });
  const { session } = await created(`/api/projects/${project._id}/sessions`, { name: "Session" });
  return {
    providerId: String(provider._id),
    projectId: String(project._id),
    sessionId: String(session._id),
  };
}

async function closeSubject(subject: Subject): Promise<void> {
  for (const drone of subject.drones) drone.close();
  await subject.server.stop();
  await subject.database.connection.dropDatabase();
  await subject.database.close();
  if (subject.commandLog) await rm(subject.commandLog, { recursive: true, force: true });
}

/** Posts one turn in a new session and answers when its work order reached a drone. */
async function dispatchOnce(
  subject: Subject,
  index: number,
  requires: string[] | null,
): Promise<{ start: number; at: number }> {
  const { users, workspaces, waiters, database, drones, server } = subject;
  const userIndex = index % users.length;
  const prompt = `prompt ${index} ${randomUUID()}`;
  const arrived = new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("work order did not arrive")), 10_000);
    waiters.set(prompt, (at) => {
      clearTimeout(timer);
      resolve(at);
    });
  });
  // A session per turn (made before the clock starts): the turns stay running, and a
  // session's next turn would wait for them on the server.
  const session = await users[userIndex]!.post(
    `/api/projects/${workspaces[userIndex]!.projectId}/sessions`,
    { name: `bench ${index}` },
  );
  const start = now();
  const posted = await users[userIndex]!.post(`/api/sessions/${session.body.session._id}/turns`, {
    prompt,
    providerId: workspaces[userIndex]!.providerId,
    ...(requires ? { requires } : {}),
  });
  if (posted.status !== 202) throw new Error(`POST turn: ${posted.status}`);
  const at = await arrived.catch(async (error: unknown) => {
    const turn = await database.models.ChatTurn.findById(posted.body.turn._id).lean();
    const events = await database.models.TurnEvent.find({ turn: turn?._id }).lean();
    const chosen = drones.find((drone) => drone.options.droneId === String(turn?.drone));
    console.error({
      chosenConnected: chosen?.connected,
      orders: chosen?.workOrders.length,
      disconnected: drones.filter((drone) => !drone.connected).length,
    });
    console.error({
      index,
      status: turn?.status,
      events: events.map((event) => [event.type, JSON.stringify(event.data)]),
      output: server.output().slice(-3000),
    });
    throw error;
  });
  waiters.delete(prompt);
  return { start, at };
}

/**
 * `labelSets`: the drones carry that many label sets (`pool=p0`…), and every other turn requires
 * one of them; the rows then compare those turns with the unlabelled ones of the same run.
 */
export async function benchDispatch(
  env: Env,
  options: {
    labelSets?: number;
    /** Other checkouts' apps/server (builds before a change), measured beside this one. */
    before?: Array<{ serverDirectory: string; name: string }>;
    /**
     * Logs the servers' MongoDB and Redis commands (command-log.ts) and prints those of one
     * dispatch by name, instead of the timing rows (the log costs time of its own).
     */
    explain?: boolean;
  } = {},
) {
  const labelSets = options.labelSets ?? 0;
  const explain = options.explain ?? false;
  const subjects: Subject[] = [];
  let floors: Floor[] = [];
  try {
    for (const before of options.before ?? []) {
      subjects.push(
        await startSubject(env, before.name, {
          serverDirectory: before.serverDirectory,
          labelSets,
          explain,
        }),
      );
    }
    subjects.push(await startSubject(env, "", { labelSets, explain }));
    await sleep(1_000);
    const samples = explain ? 40 : 200;
    const warmup = 10;
    const main = subjects[subjects.length - 1]!;
    const measureFloors = !labelSets && !explain;
    if (measureFloors) {
      floors = await Promise.all([
        openFloor(main.database, main.users[0]!.token!, main.workspaces[0]!, false),
        openFloor(main.database, main.users[0]!.token!, main.workspaces[0]!, true),
      ]);
    }
    const floorSamples: number[][] = [[], []];
    for (let index = 0; index < (labelSets ? 2 : 1) * samples + warmup; index++) {
      // With label sets, every other turn requires one: both kinds share the run's noise.
      // Each user's labelled turns cycle through every label set (one drone of theirs has each).
      const requires =
        labelSets && index % 2 === 1 ? [`pool=p${Math.floor(index / 10) % labelSets}`] : null;
      // Each server in turn, then the floors: every figure shares the load of the moment.
      for (const subject of subjects) {
        // The server's CPU from the first measured sample to the end: the turns, their sessions'
        // POSTs, and the fleet's heartbeats meanwhile (the same for every server).
        if (index === warmup) subject.cpu = -(cpuMs(subject.server.child.pid ?? 0) ?? 0);
        const { start, at } = await dispatchOnce(subject, index, requires);
        if (index >= warmup) (requires ? subject.labelled : subject.latencies).push(at - start);
        if (subject.commandLog) {
          // Quiet after each order: what follows it, then the idle fleet's background as long.
          await sleep(2 * explainTailMs);
          if (index >= warmup) {
            const origin = performance.timeOrigin;
            subject.marks.push({ start: origin + start, arrived: origin + at });
          }
        }
      }
      if (measureFloors && index >= warmup) {
        for (const [which, floor] of floors.entries())
          floorSamples[which]!.push(await floor.sample());
      }
    }
    for (const subject of subjects) subject.cpu += cpuMs(subject.server.child.pid ?? 0) ?? 0;
    if (explain) {
      await sleep(200); // the log is written every 100 ms
      for (const subject of subjects) {
        explainDispatch(
          `Dispatch, 100 drones${subject.name ? ` (${subject.name})` : ""}`,
          await readCommandLog(subject.commandLog!),
          subject.marks,
          explainTailMs,
        );
      }
      return;
    }
    if (labelSets) {
      const { labelled, latencies } = main;
      const ratio = (p: number) => (percentile(labelled, p) / percentile(latencies, p)).toFixed(2);
      rows.push(
        {
          benchmark: `Dispatch, 100 drones of ${labelSets} label sets: turns requiring a label vs unlabelled turns of the same run`,
          measure: "p50",
          gadget: `${ms(percentile(labelled, 50))} (${ratio(50)}×)`,
          baseline: ms(percentile(latencies, 50)),
          target: "within 1.2×",
        },
        {
          benchmark: "",
          measure: "p99",
          gadget: `${ms(percentile(labelled, 99))} (${ratio(99)}×)`,
          baseline: ms(percentile(latencies, 99)),
          target: "within 1.2×",
        },
      );
      return;
    }
    console.error("dispatch: baselines");
    const [floor, same] = floorSamples as [number[], number[]];
    const emit = await baselineEmitWithAck(samples);
    const bull = await baselineBullmq(env.redisUrl, samples);
    const baselineP50 = percentile(emit, 50) + percentile(bull, 50);
    const baselineP99 = percentile(emit, 99) + percentile(bull, 99);
    for (const { name, latencies, cpu } of subjects) {
      const ratio = (percentile(latencies, 50) / percentile(floor, 50)).toFixed(1);
      const sameRatio = (percentile(latencies, 50) / percentile(same, 50)).toFixed(1);
      rows.push(
        {
          benchmark: `Dispatch, 100 drones (POST turn → work order at drone${name ? `, ${name}` : ""})`,
          measure: "p50",
          gadget: `${ms(percentile(latencies, 50))} (${ratio}× the store floor, ${sameRatio}× the same-writes floor)`,
          baseline: `${ms(baselineP50)} (emitWithAck ${ms(percentile(emit, 50))} + BullMQ ${ms(percentile(bull, 50))})`,
          target: "< 15 ms",
        },
        {
          benchmark: "",
          measure: "p99",
          gadget: `${ms(percentile(latencies, 99))}; server CPU ${ms(cpu / latencies.length)} per dispatch (with its session's POST)`,
          baseline: `${ms(baselineP99)} (emitWithAck ${ms(percentile(emit, 99))} + BullMQ ${ms(percentile(bull, 99))})`,
          target: "< 50 ms",
        },
      );
    }
    rows.push(
      {
        benchmark:
          "Raw store floor of a dispatch: the three database rounds stored before a drone is told (token + session + provider reads; turn + `queued` event inserts; `dispatched` event + turn update), nothing else",
        measure: "p50 / p99",
        gadget: "—",
        baseline: `${ms(percentile(floor, 50))} / ${ms(percentile(floor, 99))}`,
        target: "",
      },
      {
        benchmark:
          "Same-writes store floor: the same rounds with the turn the server stores (its model's document, a collection with ChatTurn's indexes)",
        measure: "p50 / p99",
        gadget: "—",
        baseline: `${ms(percentile(same, 50))} / ${ms(percentile(same, 99))}`,
        target: "",
      },
    );
  } finally {
    await Promise.all(floors.map((floor) => floor.close()));
    for (const subject of subjects) await closeSubject(subject);
  }
}

/** The store floor, one sample at a time (see `storeFloor`). */
interface Floor {
  sample(): Promise<number>;
  close(): Promise<void>;
}

/**
 * The database rounds a dispatch cannot do without, on their own and in the server's order: the
 * token, session and provider reads; the turn and `queued` event inserts; the claim (`dispatched`
 * event insert and turn update) that is stored before the order leaves.
 * `same`: the turn is the document the server stores (built by the ChatTurn model from the same
 * session and provider) in a collection with ChatTurn's indexes, where the bare floor inserts a
 * four-field turn into a collection indexed by `_id` alone; the events have TurnEvent's index in
 * both. The bare floor is the figure the target has been stated against since issue 5.
 */
export async function storeFloor(
  database: Database,
  token: string,
  workspace: { sessionId: string; providerId: string },
  samples: number,
  same = false,
): Promise<number[]> {
  const floor = await openFloor(database, token, workspace, same);
  const latencies: number[] = [];
  try {
    for (let index = 0; index < samples; index++) latencies.push(await floor.sample());
  } finally {
    await floor.close();
  }
  return latencies;
}

async function openFloor(
  database: Database,
  token: string,
  workspace: { sessionId: string; providerId: string },
  same: boolean,
): Promise<Floor> {
  const { ApiToken, ChatSession, ChatTurn, Provider } = database.models;
  const suffix = randomUUID().slice(0, 6);
  const turns = database.connection.collection(`bench_raw_turns_${suffix}`);
  const events = database.connection.collection(`bench_raw_events_${suffix}`);
  await events.createIndex({ turn: 1, seq: 1 }, { unique: true });
  if (same) {
    for (const [keys, options] of ChatTurn.schema.indexes()) {
      await turns.createIndex(keys as Record<string, 1 | -1>, options as object);
    }
  }
  let index = 0;
  const sample = async () => {
    index++;
    const start = now();
    const [, session, provider] = await Promise.all([
      ApiToken.findById(sha256(token)).select({ user: 1 }).lean(),
      ChatSession.findById(workspace.sessionId).lean(),
      Provider.findById(workspace.providerId).lean(),
    ]);
    const turn = new Types.ObjectId();
    const at = new Date();
    // As TurnService.check builds it (the model's defaults included).
    const stored = same
      ? new ChatTurn({
          _id: turn,
          user: session!.user,
          session: session!._id,
          project: session!.project,
          provider: provider!._id,
          requestedDrone: null,
          llm: provider!.modelId,
          mode: session!.mode,
          prompt: `floor ${index}`,
          status: "queued",
          limits: {},
          requires: [],
          lastSeq: 1,
          createdAt: at,
          queuedAt: at,
        }).toObject()
      : { _id: turn, prompt: `floor ${index}`, status: "queued", createdAt: at };
    await Promise.all([
      turns.insertOne(stored),
      events.insertOne({
        turn,
        seq: 1,
        type: "queued",
        data: same ? { message: "Waiting for a drone" } : {},
        at,
      }),
    ]);
    await Promise.all([
      events.insertMany([
        {
          turn,
          seq: 2,
          type: "dispatched",
          data: same ? { droneId: String(turn) } : {},
          at: new Date(),
        },
      ]),
      turns.updateOne(
        { _id: turn },
        {
          $set: {
            status: "dispatched",
            drone: new Types.ObjectId(),
            startedAt: new Date(),
            leaseExpiresAt: new Date(),
            lastSeq: 2,
          },
        },
      ),
    ]);
    return now() - start;
  };
  return {
    sample,
    close: async () => {
      await Promise.all([turns.drop(), events.drop()]);
    },
  };
}
