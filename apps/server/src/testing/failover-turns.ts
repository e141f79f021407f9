// Turns across a Redis failover, for the Cluster and Sentinel tests: two server processes on one
// Redis topology, a scripted drone on each, and a turn whose drone keeps streaming (resending what
// the server did not take, as gadget-drone's sender does) while the test kills a Redis master.
import { randomUUID } from "node:crypto";
import { type AgentEvent, agentEvent } from "@gadget/protocol";
import { ApiClient, registerDrone, setupWorkspace, signup, waitFor } from "./api-client.ts";
import { ScriptedDrone } from "./scripted-drone.ts";
import { type ServerPair, startServerPair } from "./server-process.ts";

export interface FailoverFleet {
  pair: ServerPair;
  /** GADGET_REDIS_PREFIX of both servers. */
  redisPrefix: string;
  user: ApiClient;
  projectId: string;
  providerId: string;
  /** One drone on each server. */
  drones: ScriptedDrone[];
  /** Disconnects the drones, stops the servers and drops their database. */
  close(): Promise<void>;
}

/**
 * Two servers on `redisUrl`, a user with a workspace and a drone connected to each server.
 * @example const fleet = await startFailoverFleet({ mongoUrl, redisUrl: cluster.url, name: "cluster" });
 */
export async function startFailoverFleet(options: {
  mongoUrl: string;
  redisUrl: string;
  name: string;
}): Promise<FailoverFleet> {
  const name = `${options.name}_${randomUUID().slice(0, 8)}`;
  const pair = await startServerPair({
    mongoUrl: options.mongoUrl,
    redisUrl: options.redisUrl,
    name,
    // Longer than a failover: a drone whose heartbeats failed meanwhile keeps its turn.
    env: { DRONE_GRACE_MS: "60000" },
    // Two processes compiling at once on a busy 2-core machine.
    startTimeoutMs: 120_000,
  });
  const drones: ScriptedDrone[] = [];
  const close = async () => {
    for (const drone of drones) drone.close();
    await pair.stop();
  };
  try {
    const user = await signup(pair.first.url, options.name);
    const workspace = await setupWorkspace(user);
    for (const server of [pair.first, pair.second]) {
      const { droneId, credential } = await registerDrone(user, { name: `on-${server.url}` });
      drones.push(
        await ScriptedDrone.connect({ url: server.url, droneId, credential, heartbeatMs: 500 }),
      );
    }
    await waitFor(
      async () =>
        ((await user.get("/api/drones")).body.drones as Array<{ status: string }>).filter(
          (drone) => drone.status === "online",
        ).length === 2,
      20_000,
      "both drones online",
    );
    return {
      pair,
      redisPrefix: `t_${name}`,
      user,
      projectId: workspace.projectId,
      providerId: workspace.providerId,
      drones,
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

export interface StreamedTurn {
  turnId: string;
  status: string;
  response: string;
  /** The stored events as the API pages them out, in order. */
  events: Array<{ seq: number; type: string; data: Record<string, unknown> }>;
  /** The token texts the drone sent, in order, each once. */
  sent: string[];
  /** How many work orders for the turn the drones received, all together. */
  workOrders: number;
  /** The error codes of batches the server refused before taking them. */
  refusals: string[];
}

/**
 * Posts a turn through the second server and lets whichever drone gets it stream `batches`
 * batches of five tokens, then `done`. After `killAfter` batches, `during()` runs (a master is
 * killed) while the drone keeps streaming; the turn ends only once `during()` has resolved.
 */
export async function streamTurn(
  fleet: FailoverFleet,
  options: { batches: number; killAfter?: number; during?: () => Promise<void> },
): Promise<StreamedTurn> {
  const onSecond = new ApiClient(fleet.pair.second.url, fleet.user.token);
  // A session of its own: a turn left unfinished by an earlier test holds nothing back.
  const { session } = (
    await onSecond.post(`/api/projects/${fleet.projectId}/sessions`, { name: "failover" })
  ).body;
  const posted = await onSecond.post(`/api/sessions/${session._id}/turns`, {
    prompt: "stream through a failover",
    providerId: fleet.providerId,
  });
  const turnId = posted.body.turn?._id as string;
  if (!turnId) throw new Error(`turn not created: ${JSON.stringify(posted.body)}`);
  const holds = (drone: ScriptedDrone) => drone.workOrders.some((order) => order.turnId === turnId);
  await waitFor(() => fleet.drones.some(holds), 60_000, "the work order");
  const drone = fleet.drones.find(holds)!;
  const order = drone.workOrders.find((workOrder) => workOrder.turnId === turnId)!;
  const sender = new JournalSender(drone, turnId, order.nextSeq);
  try {
    let during: Promise<void> = Promise.resolve();
    for (let batch = 0; batch < options.batches; batch++) {
      if (batch === options.killAfter && options.during) during = options.during();
      const events = Array.from({ length: 5 }, (_, index) =>
        agentEvent("token", { text: `${batch}.${index} ` }),
      );
      await sender.send(events);
    }
    await during;
    await sender.send([
      agentEvent("response", { message: "through the failover" }),
      agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }),
    ]);
  } catch (error) {
    // What the servers logged (warnings up) says which connection did not come back.
    const logs = [fleet.pair.first, fleet.pair.second].map((server) =>
      server.output().slice(-4000),
    );
    throw new Error(`${String(error)}\nserver logs:\n${logs.join("\n---\n")}`);
  }
  let turn: { status: string; response: string } = { status: "", response: "" };
  await waitFor(
    async () => {
      turn = (await fleet.user.get(`/api/turns/${turnId}`)).body.turn;
      return turn.status === "completed";
    },
    30_000,
    "the turn completed",
  );
  const page = await fleet.user.get(`/api/turns/${turnId}/events?after=0&limit=1000`);
  return {
    turnId,
    status: turn.status,
    response: turn.response,
    events: page.body.events,
    sent: sender.texts,
    workOrders: fleet.drones.reduce(
      (count, each) => count + each.workOrders.filter((item) => item.turnId === turnId).length,
      0,
    ),
    refusals: sender.refusals,
  };
}

/**
 * What gadget-drone's sender does: events are journaled with their seqs, sent one batch at a
 * time, and a batch the server did not take is sent again (from where the server says it stands
 * when it answers `conflict`) until it is taken.
 */
class JournalSender {
  private readonly journal: Array<AgentEvent & { seq: number }> = [];
  /** The highest seq the server took. */
  private taken: number;
  readonly texts: string[] = [];
  readonly refusals: string[] = [];

  constructor(
    private readonly drone: ScriptedDrone,
    private readonly turnId: string,
    nextSeq: number,
  ) {
    this.taken = nextSeq - 1;
  }

  async send(events: AgentEvent[]): Promise<void> {
    for (const event of events) {
      const seq = (this.journal.at(-1)?.seq ?? this.taken) + 1;
      this.journal.push({ ...event, seq });
      if (event.type === "token") this.texts.push(String(event.data.text));
    }
    const deadline = Date.now() + 60_000;
    while (this.journal.some((item) => item.seq > this.taken)) {
      if (Date.now() > deadline) {
        throw new Error(`events after ${this.taken} never taken: ${this.refusals.join(", ")}`);
      }
      const pending = this.journal.filter((item) => item.seq > this.taken);
      const ack = await this.drone.sendBatch(this.turnId, pending).catch(() => null);
      if (ack?.ok) {
        this.taken = Math.max(this.taken, pending.at(-1)!.seq);
        continue;
      }
      this.refusals.push(ack ? ack.error.code : "no answer");
      const said = ack && !ack.ok ? (ack.error.details as { lastSeq?: number } | undefined) : null;
      if (ack?.error.code === "conflict" && typeof said?.lastSeq === "number") {
        this.taken = Math.min(this.taken, said.lastSeq);
        continue;
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}
