// The stage of the Redis failover tests with a real drone (Cluster and Sentinel): two
// `gadget-code serve` processes on one Redis topology, a scripted model, and a gadget-drone CLI
// of capacity 1 connected to the first server while the user posts turns through the second. A
// multi-pass turn is run with a Redis master killed while its second pass streams.
import path from "node:path";
import { type ServerPair, startServerPair } from "@gadget/server/testing";
import { type ScriptedModel, startScriptedModel } from "@gadget/testkit";
import { ApiClient, signup } from "@gadget/testkit/wire";
import { expect } from "vitest";
import {
  createProjectSession,
  type DroneProcess,
  freshHome,
  registerWithCli,
  startCli,
  turnEvents,
  waitForDroneOnline,
  waitForTurn,
} from "./helpers.ts";

export const finalStatuses = ["completed", "failed", "cancelled", "interrupted"];

export interface FailoverStage {
  servers: ServerPair;
  /** GADGET_REDIS_PREFIX of both servers. */
  redisPrefix: string;
  model: ScriptedModel;
  /** The user, signed in on the first server. */
  user: ApiClient;
  /** The same user on the second server, where turns are posted. */
  onSecond: ApiClient;
  drone: DroneProcess;
  /** Stops the drone, the model and the servers (dropping their database). */
  close(): Promise<void>;
}

/**
 * Two servers on `redisUrl` (Redis prefix `t_<name>`, database `test_<name>`) and one drone.
 * @example const stage = await startFailoverStage({ mongoUrl, redisUrl: cluster.url, name });
 */
export async function startFailoverStage(options: {
  mongoUrl: string;
  redisUrl: string;
  name: string;
}): Promise<FailoverStage> {
  const servers = await startServerPair({
    mongoUrl: options.mongoUrl,
    redisUrl: options.redisUrl,
    name: options.name,
    // Longer than a failover: a drone whose heartbeats failed meanwhile keeps its turn.
    env: { DRONE_GRACE_MS: "60000" },
    // Two processes compiling at once on a busy 2-core machine.
    startTimeoutMs: 120_000,
  });
  let model: ScriptedModel | undefined;
  let drone: DroneProcess | undefined;
  const close = async () => {
    if (drone && drone.child.exitCode === null && drone.child.signalCode === null) {
      drone.child.kill("SIGKILL");
      await drone.exited;
    }
    await model?.close();
    await servers.stop();
  };
  try {
    model = await startScriptedModel();
    const user = await signup(servers.first.url, "failover");
    const home = await freshHome();
    const config = path.join(home, "drone.json");
    const registered = await registerWithCli(user, servers.first.url, {
      name: "failover",
      workspace: path.join(home, "workspaces"),
      config,
      home,
      // One turn at a time: a second turn waits queued until the first frees the slot.
      capacity: 1,
    });
    if (registered.code !== 0) throw new Error(`gadget-drone register: ${registered.stderr}`);
    drone = startCli(["--config", config], home, { GADGET_DRONE_HEARTBEAT_MS: "1000" });
    await waitForDroneOnline(user, "failover", 60_000);
    return {
      servers,
      redisPrefix: `t_${options.name}`,
      model,
      user,
      onSecond: new ApiClient(servers.second.url, user.token),
      drone,
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/** A turn as the user reads it back through the API once it ended. */
export interface EndedTurn {
  turnId: string;
  // biome-ignore lint/suspicious/noExplicitAny: test convenience; assertions check the shape
  turn: any;
  // biome-ignore lint/suspicious/noExplicitAny: test convenience
  events: any[];
  /** How many chat requests the model received while the turn ran. */
  asked: number;
}

/** Posts a turn through the second server in a session (and project) of its own. */
export async function postTurn(
  stage: FailoverStage,
  name: string,
  prompt: string,
): Promise<string> {
  const fixture = await createProjectSession(stage.user, {
    name,
    modelUrl: stage.model.baseUrl,
  });
  const posted = await stage.onSecond.post(`/api/sessions/${fixture.sessionId}/turns`, {
    prompt,
    providerId: fixture.providerId,
  });
  const turnId = posted.body.turn?._id as string | undefined;
  if (!turnId) throw new Error(`turn not created: ${JSON.stringify(posted.body)}`);
  return turnId;
}

/** The text the second pass streams, slowly, while the master is killed under it. */
export const streamedText = Array.from({ length: 40 }, (_, index) => `word${index} `).join("");
export const finalText = "Done through the failover.";

/**
 * A four-pass turn (read a file; stream text and run a command; read again; answer): when the
 * drone asks for pass 2, `kill()` starts (it kills a master and resolves once a replica is
 * promoted) while the drone streams pass 2 and runs its command; pass 3 is answered only once
 * `kill()` resolved, so the turn's later events are written through the promoted master.
 */
export async function turnThroughKill<Killed>(
  stage: FailoverStage,
  kill: () => Promise<Killed>,
): Promise<EndedTurn & { killed: Killed }> {
  const before = stage.model.chatRequests.length;
  let failover: Promise<Killed> | undefined;
  stage.model.enqueue(
    { toolCalls: [{ name: "read_file", arguments: { path: "README.md" } }] },
    () => {
      failover = kill();
      return {
        text: streamedText,
        chunkSize: 6,
        chunkDelayMs: 20,
        toolCalls: [{ name: "run_command", arguments: { command: "echo through" } }],
      };
    },
    async () => {
      await failover;
      return { toolCalls: [{ name: "read_file", arguments: { path: "README.md" } }] };
    },
    { text: finalText },
  );
  const turnId = await postTurn(stage, "Failover", "Work through a Redis failover");
  const turn = await waitForTurn(stage.user, turnId, finalStatuses, 120_000);
  if (!failover) throw new Error(`the model was never asked for pass 2: ${turn.status}`);
  const killed = await failover;
  return {
    turnId,
    turn,
    events: await turnEvents(stage.user, turnId),
    asked: stage.model.chatRequests.length - before,
    killed,
  };
}

/** Completed; every event once and in order (seqs 1..N), one `dispatched`, one `done`. */
// biome-ignore lint/suspicious/noExplicitAny: test convenience
export function expectWholeTurn(turn: any, events: any[], response: string): void {
  expect(turn.status, JSON.stringify(turn.error)).toBe("completed");
  expect(turn.response).toBe(response);
  expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
  expect(events.filter((event) => event.type === "dispatched")).toHaveLength(1);
  expect(events.filter((event) => event.type === "done")).toHaveLength(1);
  expect(events.at(-1)?.type).toBe("done");
}

/** What the four-pass turn of `turnThroughKill` shows when the failover cost it nothing. */
export function expectFourPasses(ended: EndedTurn): void {
  expectWholeTurn(ended.turn, ended.events, finalText);
  // The model asked once per pass: no pass was run twice.
  expect(ended.asked).toBe(4);
  expect(ended.turn.stats).toMatchObject({ passes: 4, toolCallCount: 3 });
  const results = ended.events.filter((event) => event.type === "tool_result");
  expect(results.map((event) => [event.data.tool, event.data.ok])).toEqual([
    ["read_file", true],
    ["run_command", true],
    ["read_file", true],
  ]);
  // Every token streamed during the failover stored once, in order.
  const tokens = ended.events.filter((event) => event.type === "token");
  expect(tokens.map((event) => event.data.text).join("")).toBe(streamedText + finalText);
}
