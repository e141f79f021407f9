// Memory: the server's RSS with 2,000 idle drones and 2,000 subscribed browsers, beside a bare
// Socket.IO server holding as many sockets.
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { now, pool, rssMb, sleep } from "@gadget/testkit/measure";
import { ApiClient, IdeClient, ScriptedDrone, setupWorkspace, signup } from "@gadget/testkit/wire";
import { io as connectClient, type Socket } from "socket.io-client";
import { countOnlineDrones, type Env, rows, seedDrones, startServer } from "./harness.ts";

export async function benchMemory(env: Env, drones: number, browsers: number) {
  console.error(`memory: ${drones} idle drones + ${browsers} subscribed browsers`);
  const { server, database, url } = await startServer(env, `memory_${randomUUID().slice(0, 6)}`);
  const droneClients: ScriptedDrone[] = [];
  const browserClients: IdeClient[] = [];
  try {
    const fleetOwner = await signup(url, "fleet");
    const watcher = await signup(url, "watcher");
    const workspace = await setupWorkspace(watcher);
    const turnIds: string[] = [];
    for (let index = 0; index < 20; index++) {
      const posted = await watcher.post(`/api/sessions/${workspace.sessionId}/turns`, {
        prompt: `watch ${index}`,
        providerId: workspace.providerId,
      });
      turnIds.push(posted.body.turn._id);
    }
    await sleep(1_000);
    const idle = await rssMb(server.child.pid!);
    const credentials = await seedDrones(database, fleetOwner.userId, drones, "idle");
    const started = now();
    droneClients.push(
      ...(await pool(credentials, 50, (credential) =>
        ScriptedDrone.connect({ url, ...credential, heartbeatMs: 15_000 }),
      )),
    );
    const droneSeconds = (now() - started) / 1000;
    browserClients.push(
      ...(await pool(
        Array.from({ length: browsers }, (_, index) => index),
        50,
        async (index) => {
          const client = await IdeClient.connect(url, watcher.token!);
          await client.subscribe({ turnId: turnIds[index % turnIds.length]!, after: 0 });
          return client;
        },
      )),
    );
    await sleep(3_000);
    const loaded = await rssMb(server.child.pid!);
    const online = await countOnlineDrones(new ApiClient(url, fleetOwner.token));
    for (const client of browserClients) client.close();
    for (const client of droneClients) client.close();
    browserClients.length = 0;
    droneClients.length = 0;

    console.error("memory: baseline (bare Socket.IO server)");
    const bare = await bareServerRss(drones, browsers);
    rows.push({
      benchmark: `${drones} idle drones + ${browsers} subscribed browsers, one server process`,
      measure: "RSS",
      gadget: `${loaded.toFixed(0)} MB (idle server ${idle.toFixed(0)} MB; ${online} drones online; drones connected in ${droneSeconds.toFixed(1)} s)`,
      baseline: `${bare.loaded.toFixed(0)} MB (bare Socket.IO, idle ${bare.idle.toFixed(0)} MB)`,
      target: "< 400 MB",
    });
  } finally {
    for (const client of browserClients) client.close();
    for (const client of droneClients) client.close();
    await server.stop();
    await database.connection.dropDatabase();
    await database.close();
  }
}

export async function bareServerRss(
  drones: number,
  browsers: number,
): Promise<{ idle: number; loaded: number }> {
  const directory = path.dirname(fileURLToPath(import.meta.url));
  const child = spawn(
    process.execPath,
    ["--import", "tsx", path.join(directory, "bare-socket-server.ts")],
    {
      cwd: path.resolve(directory, ".."),
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  const port = await new Promise<number>((resolve) => {
    child.stdout.on("data", (chunk: Buffer) => {
      const match = /"port":(\d+)/.exec(chunk.toString());
      if (match) resolve(Number(match[1]));
    });
  });
  const sockets: Socket[] = [];
  try {
    await sleep(500);
    const idle = await rssMb(child.pid!);
    const connect = (namespace: string) =>
      new Promise<Socket>((resolve) => {
        const socket = connectClient(`http://127.0.0.1:${port}${namespace}`, {
          transports: ["websocket"],
          forceNew: true,
        });
        socket.once("connect", () => resolve(socket));
      });
    sockets.push(...(await pool(Array.from({ length: drones }), 50, () => connect("/drones"))));
    sockets.push(...(await pool(Array.from({ length: browsers }), 50, () => connect("/ide"))));
    await sleep(3_000);
    return { idle, loaded: await rssMb(child.pid!) };
  } finally {
    for (const socket of sockets) socket.close();
    child.kill("SIGTERM");
  }
}
