// One process of the cost curve's idle fleet (curve-fleet.ts forks it): connects the drones and
// subscribed browsers it is given, keeps them (heartbeats) until told to close, and says how long
// connecting took. A handshake that times out (Socket.IO's 20 s) is tried again, as a drone
// reconnects, and counted; any other refusal stops it, saying how many it had connected then:
// where the machine stops is the figure.
import { now, pool } from "@gadget/testkit/measure";
import { IdeClient, ScriptedDrone } from "@gadget/testkit/wire";

export interface FleetPart {
  drones: Array<{ url: string; droneId: string; credential: string }>;
  browsers: Array<{ url: string; token: string; turnId: string }>;
  heartbeatMs: number;
  /** Handshakes this process has in flight at once. */
  concurrency: number;
}

export type FleetReport =
  | { kind: "connected"; droneSeconds: number; browserSeconds: number; retries: number }
  | { kind: "failed"; connected: number; message: string }
  /** A socket the server or the wire closed (first one only): the fleet no longer holds them all. */
  | { kind: "dropped"; connected: number; reason: string };

const attempts = 5;
let retries = 0;
let closing = false;
let dropped = false;
const droneClients: ScriptedDrone[] = [];
const browserClients: IdeClient[] = [];

function send(report: FleetReport) {
  process.send?.(report);
}

function watch(socket: { on(event: "disconnect", listener: (reason: string) => void): unknown }) {
  socket.on("disconnect", (reason) => {
    if (closing || dropped) return;
    dropped = true;
    send({ kind: "dropped", connected: droneClients.length + browserClients.length, reason });
  });
}

async function patiently<T>(open: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await open();
    } catch (error) {
      if ((error as Error).message !== "timeout" || attempt === attempts) throw error;
      retries++;
    }
  }
}

async function connect(part: FleetPart) {
  const droneStart = now();
  await pool(part.drones, part.concurrency, async (drone) => {
    const client = await patiently(() =>
      ScriptedDrone.connect({ ...drone, capacity: 8, heartbeatMs: part.heartbeatMs }),
    );
    droneClients.push(client);
    watch(client.socket);
  });
  const droneSeconds = (now() - droneStart) / 1000;
  const browserStart = now();
  await pool(part.browsers, part.concurrency, async (browser) => {
    const client = await patiently(() => IdeClient.connect(browser.url, browser.token));
    browserClients.push(client);
    watch(client.socket);
    await client.subscribe({ turnId: browser.turnId, after: 0 });
  });
  return { droneSeconds, browserSeconds: (now() - browserStart) / 1000, retries };
}

process.on("message", (message: { kind: "connect"; part: FleetPart } | { kind: "close" }) => {
  if (message.kind === "close") {
    closing = true;
    for (const client of browserClients) client.close();
    for (const drone of droneClients) drone.close();
    process.exit(0);
  }
  connect(message.part).then(
    (seconds) => send({ kind: "connected", ...seconds }),
    (error: Error) =>
      send({
        kind: "failed",
        connected: droneClients.length + browserClients.length,
        message: error.message,
      }),
  );
});
