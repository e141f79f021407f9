// `pnpm start` in a fresh copy of the repository, as a newcomer runs it: the stack comes up, the
// web IDE loads, the local drone is online and runs a prompt against a scripted provider; Ctrl-C
// leaves no process behind; a second start reuses everything; a crashed child stops the rest; a
// first start killed at any step leaves a data directory the next start logs in with.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import {
  cp,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  rm,
  stat,
  utimes,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { findRepoRoot, stablePort, startRedisCluster } from "@gadget/services";
import { type ScriptedModel, startScriptedModel } from "@gadget/testkit";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";

const repoRoot = findRepoRoot();
let workDir: string;
let copy: string;
let port: number;
let model: ScriptedModel;
let remote: string;
const launched: ChildProcess[] = [];

interface Launch {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** This process's environment without anything that points at other services or data. */
function withoutServiceUrls(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ["MONGO_URL", "REDIS_URL", "GADGET_DATA_DIR", "GADGET_WEB_DIR", "NODE_ENV"]) {
    delete env[name];
  }
  return env;
}

/** Runs `pnpm start` in the copy, in its own process group as a terminal would. */
function startLauncher(extraEnv: NodeJS.ProcessEnv = {}): Launch {
  const env = { ...withoutServiceUrls(), PORT: String(port), LOG_LEVEL: "info", ...extraEnv };
  const child = spawn("pnpm", ["start"], { cwd: copy, env, detached: true });
  launched.push(child);
  let text = "";
  child.stdout?.on("data", (chunk) => {
    text += chunk;
  });
  child.stderr?.on("data", (chunk) => {
    text += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  return { child, output: () => text, exited };
}

async function until<T>(
  what: string,
  timeoutMs: number,
  check: () => Promise<T | undefined> | T | undefined,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Waits for the "running" banner; fails with the launcher's output if it exits first. */
async function ready(launch: Launch): Promise<{ url: string; email: string; password: string }> {
  let ended = false;
  void launch.exited.then(() => {
    ended = true;
  });
  await until("pnpm start to print its banner", 240_000, () => {
    if (ended) throw new Error(`pnpm start exited early:\n${launch.output()}`);
    return launch.output().includes("Press Ctrl-C to stop.") || undefined;
  });
  const text = launch.output();
  const url = /running at (http:\/\/\S+?)\/?\n/.exec(text)?.[1];
  const login = /log in as (\S+) with password (\S+)/.exec(text);
  if (!url || !login) throw new Error(`no URL or login in:\n${text}`);
  return { url, email: login[1]!, password: login[2]! };
}

/** Ctrl-C: SIGINT to the launcher's process group; resolves with its exit code. */
async function ctrlC(launch: Launch): Promise<number | null> {
  process.kill(-launch.child.pid!, "SIGINT");
  return Promise.race([
    launch.exited,
    new Promise<never>((_, reject) =>
      setTimeout(
        () => reject(new Error(`still running 20 s after Ctrl-C:\n${launch.output()}`)),
        20_000,
      ),
    ),
  ]);
}

/** Processes whose command line or working directory is inside the copy (or `roots`). */
async function processesInCopy(roots: string[] = []): Promise<string[]> {
  const inside = [copy, ...roots];
  const found: string[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const commandLine = (await readFile(`/proc/${entry}/cmdline`, "utf8")).replaceAll("\0", " ");
      const cwd = await readlink(`/proc/${entry}/cwd`).catch(() => "");
      if (inside.some((root) => commandLine.includes(root) || cwd.startsWith(root)))
        found.push(`${entry}: ${commandLine}`);
    } catch {
      // Gone while reading.
    }
  }
  return found;
}

/** Processes still in the copy `waitMs` after the launcher ended (empty when it cleaned up). */
async function leftBehind(waitMs = 5_000, roots: string[] = []): Promise<string[]> {
  const deadline = Date.now() + waitMs;
  let found = await processesInCopy(roots);
  while (found.length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    found = await processesInCopy(roots);
  }
  return found;
}

async function api<T = Record<string, unknown>>(
  url: string,
  method: string,
  route: string,
  body?: unknown,
  token?: string,
): Promise<{ status: number; body: T }> {
  const response = await fetch(`${url}${route}`, {
    method,
    headers: {
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as T };
}

function git(cwd: string, ...args: string[]): void {
  execFileSync("git", args, {
    cwd,
    stdio: "ignore",
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: "T",
      GIT_AUTHOR_EMAIL: "t@example.com",
      GIT_COMMITTER_NAME: "T",
      GIT_COMMITTER_EMAIL: "t@example.com",
    },
  });
}

beforeAll(async () => {
  workDir = await mkdtemp(path.join(tmpdir(), "gadget-start-"));
  copy = path.join(workDir, "repo");
  // What a clone holds (tracked and new files, nothing ignored: no node_modules, dist or .gadget).
  const files = execFileSync("git", ["ls-files", "-co", "--exclude-standard", "-z"], {
    cwd: repoRoot,
    encoding: "utf8",
  })
    .split("\0")
    .filter(Boolean);
  for (const file of files) {
    await mkdir(path.dirname(path.join(copy, file)), { recursive: true });
    await cp(path.join(repoRoot, file), path.join(copy, file)).catch(
      (error: NodeJS.ErrnoException) => {
        if (error.code !== "ENOENT") throw error; // deleted but not yet staged
      },
    );
  }
  execFileSync("pnpm", ["install", "--offline", "--frozen-lockfile"], {
    cwd: copy,
    stdio: "ignore",
  });
  port = await stablePort();
  model = await startScriptedModel({
    handler: () => ({ text: "Hello from the scripted model" }),
  });
  const bare = path.join(workDir, "project.git");
  const scratch = path.join(workDir, "scratch");
  git(workDir, "init", "--bare", "--initial-branch=main", bare);
  git(workDir, "clone", bare, scratch);
  git(scratch, "checkout", "-B", "main");
  await writeFile(path.join(scratch, "README.md"), "# Demo\n");
  git(scratch, "add", "-A");
  git(scratch, "commit", "-m", "first");
  git(scratch, "push", "origin", "main");
  remote = bare;
}, 300_000);

// A failed test must not leave its stack running into the next one (same port, same data).
afterEach(async () => {
  for (const child of launched) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    process.kill(-child.pid!, "SIGINT");
    await new Promise((resolve) => {
      child.once("exit", resolve);
      setTimeout(resolve, 20_000);
    });
  }
});

afterAll(async () => {
  for (const child of launched) {
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
  await model?.close();
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

describe("pnpm start", () => {
  let first: { url: string; email: string; password: string };
  let turnId: string;
  let droneId: string;

  it("brings up the server, web IDE and a local drone that runs a prompt; Ctrl-C stops it all", async () => {
    const launch = startLauncher();
    first = await ready(launch);
    expect(first.url).toBe(`http://127.0.0.1:${port}`);
    expect(launch.output()).toContain("building the web IDE");
    expect(launch.output()).toContain("registering a local drone");

    expect((await fetch(`${first.url}/readyz`)).status).toBe(200);
    const page = await (await fetch(`${first.url}/`)).text();
    expect(page).toContain('<div id="root">');
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(page)?.[1];
    expect(script).toBeDefined();
    expect((await fetch(`${first.url}${script}`)).status).toBe(200);

    const login = await api<{ token: string }>(first.url, "POST", "/api/auth/login", {
      email: first.email,
      password: first.password,
    });
    expect(login.status).toBe(200);
    const token = login.body.token;
    const drones = await api<{ drones: Array<{ _id: string; status: string }> }>(
      first.url,
      "GET",
      "/api/drones",
      undefined,
      token,
    );
    expect(drones.body.drones).toHaveLength(1);
    expect(drones.body.drones[0]?.status).toBe("online");
    droneId = drones.body.drones[0]!._id;

    const provider = await api<{ provider: { _id: string } }>(
      first.url,
      "POST",
      "/api/providers",
      {
        name: "scripted",
        baseUrl: model.baseUrl,
        apiKey: "sk-local",
        modelId: "scripted-model",
      },
      token,
    );
    const project = await api<{ project: { _id: string; slug: string } }>(
      first.url,
      "POST",
      "/api/projects",
      { name: "Demo", gitUrl: remote },
      token,
    );
    const session = await api<{ session: { _id: string } }>(
      first.url,
      "POST",
      `/api/projects/${project.body.project._id}/sessions`,
      { name: "first" },
      token,
    );
    const turn = await api<{ turn: { _id: string } }>(
      first.url,
      "POST",
      `/api/sessions/${session.body.session._id}/turns`,
      {
        prompt: "say hello",
        providerId: provider.body.provider._id,
      },
      token,
    );
    expect(turn.status).toBe(202);
    turnId = turn.body.turn._id;
    const finished = await until("the turn to finish", 60_000, async () => {
      const answer = await api<{ turn: { status: string; response: string } }>(
        first.url,
        "GET",
        `/api/turns/${turnId}`,
        undefined,
        token,
      );
      return ["completed", "failed", "interrupted", "cancelled"].includes(answer.body.turn.status)
        ? answer.body.turn
        : undefined;
    });
    expect(finished).toMatchObject({
      status: "completed",
      response: "Hello from the scripted model",
    });
    expect(JSON.stringify(model.chatRequests.at(-1)?.messages)).toContain("say hello");
    // The workspace is where the banner says: under .gadget/ in the copy.
    expect(
      await readFile(
        path.join(copy, ".gadget/workspace", project.body.project.slug, "README.md"),
        "utf8",
      ),
    ).toBe("# Demo\n");

    await ctrlC(launch);
    expect(launch.output()).toContain("stopping the drone, the server and the services");
    expect(await leftBehind()).toEqual([]);
  }, 400_000);

  it("reuses the build, the data, the user and the drone on the second start", async () => {
    const launch = startLauncher();
    const second = await ready(launch);
    const text = launch.output();
    expect(text).not.toContain("building the web IDE");
    expect(text).not.toContain("registering a local drone");
    expect(second).toEqual(first);

    const login = await api<{ token: string }>(second.url, "POST", "/api/auth/login", {
      email: first.email,
      password: first.password,
    });
    const token = login.body.token;
    const drones = await api<{ drones: Array<{ _id: string; status: string }> }>(
      second.url,
      "GET",
      "/api/drones",
      undefined,
      token,
    );
    expect(drones.body.drones.map((drone) => [drone._id, drone.status])).toEqual([
      [droneId, "online"],
    ]);
    const turn = await api<{ turn: { status: string; response: string } }>(
      second.url,
      "GET",
      `/api/turns/${turnId}`,
      undefined,
      token,
    );
    expect(turn.body.turn).toMatchObject({
      status: "completed",
      response: "Hello from the scripted model",
    });

    // Admin commands use the services this run started (not a second server on the same data).
    const created = execFileSync(
      "pnpm",
      ["--silent", "gadget-code", "user", "create", "--email", "second@example.com"],
      {
        cwd: copy,
        encoding: "utf8",
        env: withoutServiceUrls(),
      },
    );
    const password = /Password: (\S+)/.exec(created)?.[1];
    expect(password).toBeDefined();
    const secondUser = await api(second.url, "POST", "/api/auth/login", {
      email: "second@example.com",
      password,
    });
    expect(secondUser.status).toBe(200);

    await ctrlC(launch);
    expect(await leftBehind()).toEqual([]);
  }, 300_000);

  it("runs the stack on the Redis Cluster REDIS_URL names, with its own MongoDB-compatible server", async () => {
    const cluster = await startRedisCluster(path.join(workDir, "cluster"));
    try {
      const launch = startLauncher({ REDIS_URL: cluster.url });
      const started = await ready(launch);
      // Only the database is the launcher's own: no private redis-server beside the cluster.
      const inCopy = await processesInCopy();
      expect(inCopy.filter((line) => line.includes("redis-server"))).toEqual([]);
      const login = await api<{ token: string }>(started.url, "POST", "/api/auth/login", {
        email: started.email,
        password: started.password,
      });
      const drones = await until("the local drone online through the cluster", 60_000, async () => {
        const answer = await api<{ drones: Array<{ status: string }> }>(
          started.url,
          "GET",
          "/api/drones",
          undefined,
          login.body.token,
        );
        return answer.body.drones.some((drone) => drone.status === "online")
          ? answer.body.drones
          : undefined;
      });
      expect(drones).toHaveLength(1);
      await ctrlC(launch);
      expect(await leftBehind()).toEqual([]);
    } finally {
      await cluster.stop();
    }
  }, 300_000);

  it("stops everything and names the child when one of them dies", async () => {
    const launch = startLauncher();
    await ready(launch);
    const drone = (await processesInCopy()).find((line) => line.includes("gadget-drone.js start"));
    expect(drone).toBeDefined();
    process.kill(Number(drone!.split(":")[0]), "SIGKILL");
    const code = await Promise.race([
      launch.exited,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error(launch.output())), 20_000),
      ),
    ]);
    expect(code).not.toBe(0);
    expect(launch.output()).toContain(
      "The drone stopped unexpectedly (signal SIGKILL); its log is .gadget/logs/drone.log",
    );
    expect(await leftBehind()).toEqual([]);
  }, 300_000);
});

describe("pnpm start killed during its first start", () => {
  // The launcher's steps, in the order it announces them (apps/launcher/src/launcher.ts).
  const steps = [
    "building the web IDE…",
    "starting Redis and a MongoDB-compatible server",
    "starting the server…",
    "creating the local user…",
    "registering a local drone…",
    "starting the drone…",
  ];

  it("leaves, at every step, a data directory the next start logs in with", async () => {
    const dataDir = path.join(workDir, "killed-data");
    const userFile = path.join(dataDir, "local-user.json");
    const env = { GADGET_DATA_DIR: dataDir };
    // A changed source makes the first start build the web IDE again, so that step is killed too.
    const now = new Date();
    await utimes(path.join(copy, "apps/web/index.html"), now, now);

    // Each start goes one step further than the last before it is killed (SIGKILL to `pnpm
    // start`'s process group, as when its terminal is killed); the next one goes on from there.
    for (const step of steps) {
      const launch = startLauncher(env);
      await until(`pnpm start to announce "${step}"`, 240_000, () => {
        if (launch.child.exitCode !== null) {
          throw new Error(`pnpm start exited before "${step}":\n${launch.output()}`);
        }
        return launch.output().includes(step) || undefined;
      });
      process.kill(-launch.child.pid!, "SIGKILL");
      await launch.exited;
      if (step === "creating the local user…") {
        // Announced after the password is on disk and before the server is asked.
        expect((await stat(userFile)).mode & 0o777).toBe(0o600);
      }
      // What the launcher started (server, services, registration) ends with it.
      expect(await leftBehind(30_000, [dataDir])).toEqual([]);
    }

    const launch = startLauncher(env);
    const started = await ready(launch);
    const kept = JSON.parse(await readFile(userFile, "utf8")) as {
      email: string;
      password: string;
    };
    expect(started).toMatchObject(kept);
    expect((await stat(userFile)).mode & 0o777).toBe(0o600);
    const login = await api<{ token: string }>(started.url, "POST", "/api/auth/login", kept);
    expect(login.status).toBe(200);
    const drones = await api<{ drones: Array<{ status: string }> }>(
      started.url,
      "GET",
      "/api/drones",
      undefined,
      login.body.token,
    );
    expect(drones.body.drones.some((drone) => drone.status === "online")).toBe(true);
    await ctrlC(launch);
    expect(await leftBehind(5_000, [dataDir])).toEqual([]);
  }, 900_000);
});
