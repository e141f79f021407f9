// What the images run, run here: the server bundle (apps/server/scripts/build.mjs, as
// docker/server.Dockerfile builds it) started by the image's CMD with the image's ENV and the
// compose environment; the healthchecks; and docker/drone-entrypoint.sh registering a real
// gadget-drone with a token and starting it. Only MONGO_URL/REDIS_URL (the test services), the
// port, and paths inside the image (/app/web, /data) are replaced.
import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { openDatabase } from "@gadget/db";
import { agentEvent } from "@gadget/protocol";
import { databaseUrl, freePort } from "@gadget/services";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ApiClient, registerDrone, setupWorkspace, waitFor } from "../../src/testing/api-client.ts";
import { ScriptedDrone } from "../../src/testing/scripted-drone.ts";
import { uniqueName } from "../../src/testing/test-server.ts";
import {
  commandOf,
  composeHealthcheckCommand,
  dockerDir,
  healthcheckCommand,
  interpolate,
  readComposeFile,
  readDockerfile,
  readEnvFile,
  repoRoot,
  serviceEnvironment,
  stageEnvironment,
} from "./deployment-files.ts";

const compose = readComposeFile();
const filled: Record<string, string> = {
  ...readEnvFile(path.join(dockerDir, ".env.example")),
  GADGET_SECRET: "0123456789abcdef0123456789abcdef0123456789abcdef",
};
const serverDockerfile = readDockerfile(path.join(dockerDir, "server.Dockerfile"));
const droneDockerfile = readDockerfile(path.join(dockerDir, "drone.Dockerfile"));
const name = uniqueName("compose");
const scratch = mkdtempSync(path.join(tmpdir(), "gadget-compose-"));
/** Stands in for the image's PATH: gadget-code and gadget-drone as the images install them. */
const binDir = path.join(scratch, "bin");
const basePath = [
  binDir,
  path.dirname(process.execPath),
  "/usr/local/bin",
  "/usr/bin",
  "/bin",
].join(":");

interface Running {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

function run(argv: string[], env: Record<string, string>): Running {
  const [command = "", ...args] = argv;
  const child = spawn(command, args, { env, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  return {
    child,
    output: () => output,
    exited,
    stop: async (signal = "SIGTERM") => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const killer = setTimeout(() => child.kill("SIGKILL"), 15_000);
      const code = await exited;
      clearTimeout(killer);
      return code;
    },
  };
}

/** Runs a healthcheck command; resolves with its exit code. */
function check(argv: string[], env: Record<string, string>): Promise<number> {
  const [command = "", ...args] = argv;
  return new Promise((resolve) => {
    execFile(command, args, { env, timeout: 10_000 }, (error) =>
      resolve(error ? Number(error.code ?? 1) || 1 : 0),
    );
  });
}

/**
 * POST `route` with a JSON body from `localAddress` (all of 127.0.0.0/8 is this machine) with
 * extra headers; resolves with the status and the parsed answer.
 */
function postFrom(
  localAddress: string,
  route: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      new URL(route, serverUrl),
      {
        method: "POST",
        localAddress,
        headers: { "content-type": "application/json", ...headers },
      },
      (response) => {
        let text = "";
        response.on("data", (chunk: Buffer) => {
          text += chunk.toString();
        });
        response.on("end", () =>
          resolve({ status: response.statusCode ?? 0, body: text ? JSON.parse(text) : {} }),
        );
      },
    );
    request.on("error", reject);
    request.end(JSON.stringify(body));
  });
}

/** A login with a wrong password from `localAddress`; resolves with the status. */
async function loginFrom(
  localAddress: string,
  email: string,
  headers: Record<string, string>,
): Promise<number> {
  return (
    await postFrom(
      localAddress,
      "/api/auth/login",
      { email, password: "not the password" },
      headers,
    )
  ).status;
}

let accounts = 0;
/**
 * An account made the way the shipped configuration asks (signup is closed): the image's
 * `gadget-code user create`, then a login through the API.
 */
async function account(tag: string): Promise<ApiClient & { userId: string; email: string }> {
  accounts++;
  const email = `${tag}-${accounts}-${Date.now()}@example.com`;
  const password = "correct horse battery";
  execFileSync(
    path.join(binDir, "gadget-code"),
    ["user", "create", "--email", email, "--password-stdin"],
    { env: serverEnv, input: `${password}\n`, stdio: ["pipe", "ignore", "pipe"] },
  );
  // From an address of its own: the forged-address test counts the attempts of 127.0.0.1.
  const login = await postFrom("127.0.0.9", "/api/auth/login", { email, password });
  if (login.status !== 200) throw new Error(`login failed: ${JSON.stringify(login.body)}`);
  const client = new ApiClient(serverUrl, String(login.body.token));
  const user = login.body.user as { _id: string };
  return Object.assign(client, { userId: String(user._id), email });
}

let server: Running;
let serverUrl: string;
let serverEnv: Record<string, string>;
const started: Running[] = [];
const closers: Array<{ close(): void }> = [];

beforeAll(async () => {
  // The server's build stage, minus the web build: a fixture page stands in for apps/web/dist.
  const dist = path.join(scratch, "app");
  execFileSync(
    process.execPath,
    [path.join(repoRoot, "apps/server/scripts/build.mjs"), "--outdir", dist],
    { stdio: "pipe" },
  );
  const webDir = path.join(scratch, "web");
  mkdirSync(webDir);
  writeFileSync(
    path.join(webDir, "index.html"),
    "<!doctype html><title>Gadget Code (fixture)</title>",
  );
  mkdirSync(binDir);
  symlinkSync(path.join(dist, "gadget-code.mjs"), path.join(binDir, "gadget-code"));
  symlinkSync(
    path.join(repoRoot, "apps/drone/bin/gadget-drone.js"),
    path.join(binDir, "gadget-drone"),
  );

  const port = await freePort();
  serverEnv = {
    ...stageEnvironment(serverDockerfile),
    ...serviceEnvironment(compose.services["server-1"] ?? {}, filled),
    PATH: basePath,
    MONGO_URL: databaseUrl(inject("mongoUrl"), `test_${name}`),
    REDIS_URL: inject("redisUrl"),
    GADGET_REDIS_PREFIX: `t_${name}`,
    HOST: "127.0.0.1",
    PORT: String(port),
    GADGET_WEB_DIR: webDir,
    GADGET_DATA_DIR: path.join(scratch, "data"),
    LOG_LEVEL: "warn",
  };
  const command = serverDockerfile.instructions.findLast(({ keyword }) => keyword === "CMD");
  server = run(commandOf(command?.rest ?? ""), serverEnv);
  started.push(server);
  const listening = await waitFor(
    () => /"listening":"([^"]+)"/.exec(server.output())?.[1],
    60_000,
    "the server to listen",
  ).catch((error: Error) => {
    throw new Error(`${error.message}:\n${server.output()}`);
  });
  serverUrl = String(listening);
}, 120_000);

afterAll(async () => {
  for (const closer of closers) closer.close();
  await Promise.all(started.map((process) => process.stop()));
  const database = await openDatabase(databaseUrl(inject("mongoUrl"), `test_${name}`), {
    ensureIndexes: false,
  });
  await database.connection.dropDatabase();
  await database.close();
  rmSync(scratch, { recursive: true, force: true });
});

describe("the server image's command with the compose environment", () => {
  it("starts and is ready: MongoDB and Redis answer", async () => {
    const ready = await fetch(`${serverUrl}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({
      ok: true,
      checks: { mongo: true, redis: true, accepting: true },
    });
  });

  it("passes the image's and the compose file's healthchecks, which fail when nothing answers", async () => {
    const composeCheck = compose.services["server-1"]?.healthcheck;
    if (!composeCheck) throw new Error("server-1 has no healthcheck");
    const commands = [
      healthcheckCommand(serverDockerfile),
      composeHealthcheckCommand(composeCheck),
    ];
    const closed = String(await freePort());
    for (const command of commands) {
      expect(await check(command, serverEnv), command.join(" ")).toBe(0);
      expect(await check(command, { ...serverEnv, PORT: closed }), command.join(" ")).not.toBe(0);
    }
  });

  it("serves the web IDE from GADGET_WEB_DIR, also for client routes", async () => {
    for (const page of ["/", "/projects/some-project"]) {
      const response = await fetch(`${serverUrl}${page}`);
      expect(response.status, page).toBe(200);
      expect(await response.text(), page).toContain("Gadget Code (fixture)");
    }
  });

  it("keeps signup closed as shipped: accounts come from the administrator's command", async () => {
    const stranger = await new ApiClient(serverUrl).post("/api/auth/signup", {
      email: `stranger-${Date.now()}@example.com`,
      password: "correct horse battery",
    });
    expect(stranger.status).toBe(403);
    expect(stranger.body.error.message).toMatch(/closed/);
    const operatorMade = await account("operator-made");
    expect((await operatorMade.get("/api/me")).status).toBe(200);
  });

  it("tells users to register drones at PUBLIC_URL, not at the container's address", async () => {
    const user = await account("public");
    const created = await user.post("/api/drones/registration-tokens");
    expect(created.status).toBe(201);
    expect(created.body.command).toContain(`--server ${filled.PUBLIC_URL}`);
  });

  it("dispatches a turn to a drone and completes it", async () => {
    const user = await account("turn");
    const workspace = await setupWorkspace(user);
    const { droneId, credential } = await registerDrone(user);
    const drone = await ScriptedDrone.connect({ url: serverUrl, droneId, credential });
    closers.push(drone);
    const posted = await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
      prompt: "hello from the container",
      providerId: workspace.providerId,
    });
    expect(posted.status).toBe(202);
    const order = await drone.nextWorkOrder();
    expect(order.turnId).toBe(posted.body.turn._id);
    await drone.stream(order.turnId, [
      agentEvent("response", { message: "hello back" }),
      agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }),
    ]);
    await waitFor(
      async () => (await user.get(`/api/turns/${order.turnId}`)).body.turn.status === "completed",
      10_000,
      "the turn to complete",
    );
    expect((await user.get(`/api/turns/${order.turnId}`)).body.turn.response).toBe("hello back");
  });

  // Security review, finding 9: with GADGET_TRUST_PROXY=true a client put any address first in
  // X-Forwarded-For and made 70 login attempts a minute, never limited. The compose servers trust
  // the balancer's address only, and this test's client is not the balancer.
  it("limits logins by the caller's real address, whatever X-Forwarded-For it forges", async () => {
    const balancer = compose.services.lb?.networks?.default?.ipv4_address ?? "";
    expect(serverEnv.GADGET_TRUST_PROXY).toBe(interpolate(balancer, filled));
    const forged = (attempt: number) =>
      [
        `203.0.113.${attempt}`,
        `203.0.113.${attempt}, ${serverEnv.GADGET_TRUST_PROXY}`,
        serverEnv.GADGET_TRUST_PROXY ?? "",
      ][attempt % 3];
    // Another email each time: only the per-address limit (50 a minute) applies.
    const statuses = await Promise.all(
      Array.from({ length: 70 }, (_, attempt) =>
        loginFrom("127.0.0.1", `forger-${name}-${attempt}@example.com`, {
          "x-forwarded-for": forged(attempt) ?? "",
        }),
      ),
    );
    expect(statuses.filter((status) => status === 429)).toHaveLength(20);
    expect(statuses.filter((status) => status !== 429 && status !== 401)).toEqual([]);
    // The limit is the address's own: another address is answered, even naming the limited one.
    expect(
      await loginFrom("127.0.0.2", `other-${name}@example.com`, { "x-forwarded-for": "127.0.0.1" }),
    ).toBe(401);
    // 71 logins at the production password cost (each hashes, known email or not): on a busy
    // machine that is minutes, not the 60 s it takes on a quiet one.
  }, 240_000);

  it("exposes on /metrics only gadget_ metrics that docs/operations.md documents", async () => {
    const text = await (await fetch(`${serverUrl}/metrics`)).text();
    const names = [...text.matchAll(/^# TYPE (gadget_\S+) (\w+)/gm)]
      .map((match) => match[1] ?? "")
      .filter((metric) => !metric.startsWith("gadget_process_"));
    expect(names).toContain("gadget_connected_drones");
    const operations = readFileSync(path.join(repoRoot, "docs/operations.md"), "utf8");
    for (const metric of names) expect(operations, metric).toContain(`\`${metric}`);
  });
});

describe("the drone image's entrypoint", () => {
  const entrypoint = path.join(dockerDir, "drone-entrypoint.sh");
  const image = stageEnvironment(droneDockerfile);
  const composeCheck = compose.services.drone?.healthcheck;
  const droneEnv = (dataDir: string, overrides: Record<string, string> = {}) => ({
    ...image,
    ...serviceEnvironment(compose.services.drone ?? {}, filled),
    PATH: basePath,
    HOME: path.join(dataDir, "home"),
    // The volume (/data in the image) is a directory of this test.
    GADGET_DRONE_CONFIG: path.join(dataDir, path.basename(image.GADGET_DRONE_CONFIG ?? "")),
    GADGET_SERVER_URL: serverUrl,
    LOG_LEVEL: "warn",
    ...overrides,
  });
  const healthchecks = () => {
    if (!composeCheck) throw new Error("the drone has no healthcheck");
    return [healthcheckCommand(droneDockerfile), composeHealthcheckCommand(composeCheck)];
  };
  const healthy = async (env: Record<string, string>) =>
    Promise.all(healthchecks().map((command) => check(command, env)));

  it("registers with the token on first start, connects, and reuses its config afterwards", async () => {
    const user = await account("entry");
    const token = (await user.post("/api/drones/registration-tokens")).body.token as string;
    const dataDir = path.join(scratch, "drone-data");
    mkdirSync(dataDir);
    const env = droneEnv(dataDir, { GADGET_REGISTRATION_TOKEN: token });

    const first = run([entrypoint], env);
    started.push(first);
    const online = async () => {
      const drones = (await user.get("/api/drones")).body.drones;
      return drones.length === 1 && drones[0].status === "online" ? drones[0] : null;
    };
    const drone = await waitFor(online, 30_000, "the drone to come online").catch(
      (error: Error) => {
        throw new Error(`${error.message}:\n${first.output()}`);
      },
    );
    expect(drone.name).toBe(filled.GADGET_DRONE_NAME);
    expect(drone.capacity).toBe(Number(filled.GADGET_DRONE_CAPACITY));
    expect(readFileSync(env.GADGET_DRONE_CONFIG, "utf8")).toContain(drone._id);
    await waitFor(async () => (await healthy(env)).every((code) => code === 0), 10_000, "healthy");

    expect(await first.stop("SIGTERM")).toBe(0);
    expect(await healthy(env)).not.toContain(0);
    await waitFor(async () => !(await online()), 10_000, "the drone to go offline");

    // The token is spent; the config on the volume is what the second start uses.
    const second = run([entrypoint], env);
    started.push(second);
    const again = await waitFor(online, 30_000, "the drone to come back").catch((error: Error) => {
      throw new Error(`${error.message}:\n${second.output()}`);
    });
    expect(again._id).toBe(drone._id);
    expect((await user.get("/api/drones")).body.drones).toHaveLength(1);
    expect(await second.stop("SIGTERM")).toBe(0);

    // With arguments it is the gadget-drone CLI; after `unregister` the spent token is not
    // tried again: the container waits for a new one.
    const unregister = run([entrypoint, "unregister"], env);
    expect(await unregister.exited, unregister.output()).toBe(0);
    expect(existsSync(env.GADGET_DRONE_CONFIG)).toBe(false);
    const third = run([entrypoint], env);
    started.push(third);
    await waitFor(() => third.output().includes("used already"), 10_000, "advice");
    expect(await healthy(env)).not.toContain(0);
    expect(await third.stop("SIGTERM")).toBe(0);
  }, 90_000);

  it("without a token or config, waits and says how to get one, unhealthy", async () => {
    const dataDir = path.join(scratch, "drone-unregistered");
    mkdirSync(dataDir);
    const env = droneEnv(dataDir, { GADGET_REGISTRATION_TOKEN: "" });
    const waiting = run([entrypoint], env);
    started.push(waiting);
    await waitFor(() => waiting.output().includes("GADGET_REGISTRATION_TOKEN"), 10_000, "advice");
    expect(waiting.output()).toContain("Drones -> Add a drone");
    expect(waiting.child.exitCode).toBeNull();
    expect(await healthy(env)).not.toContain(0);
    expect(await waiting.stop("SIGTERM")).toBe(0);
  });

  it("with an expired or used token, fails with the server's reason", async () => {
    const dataDir = path.join(scratch, "drone-bad-token");
    mkdirSync(dataDir);
    const env = droneEnv(dataDir, { GADGET_REGISTRATION_TOKEN: "gdr_not-a-real-token" });
    const failing = run([entrypoint], env);
    started.push(failing);
    expect(await failing.exited).toBe(1);
    expect(failing.output()).toMatch(/invalid, expired or already used/);
  });
});
