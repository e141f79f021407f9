// How long the one pasted line takes from Enter to an online drone: `curl … | sh -s -- --token`
// then `gadget-drone start`, each round on a fresh HOME, beside the same done by hand in the same
// run — `npm install --global` of the same tarball from the same server, `gadget-drone register`,
// `gadget-drone start` — with the rounds of the two interleaved.
import { execFile, spawn } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { startTestServer } from "@gadget/server/testing";
import { findRepoRoot, startServices } from "@gadget/services";
import { packDrone } from "@gadget/testkit";
import { markdownTable, summarize } from "@gadget/testkit/measure";
import { type ApiClient, signup } from "@gadget/testkit/wire";

const rounds = Number(process.env.BENCH_INSTALL_ROUNDS ?? 5);

function run(command: string, args: string[], env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { env, timeout: 120_000 }, (error, stdout, stderr) =>
      error ? reject(new Error(`${command} ${args.join(" ")}: ${stderr}`)) : resolve(stdout),
    );
  });
}

/** Starts `gadget-drone start` and resolves with when the server lists the drone online. */
async function startUntilOnline(
  user: ApiClient,
  bin: string,
  name: string,
  env: Record<string, string>,
): Promise<{ onlineAt: number; stop: () => Promise<void> }> {
  const drone = spawn(bin, ["start"], { env, stdio: "ignore" });
  const exited = new Promise((resolve) => drone.once("exit", resolve));
  for (;;) {
    const drones = (await user.get("/api/drones")).body.drones as Array<Record<string, unknown>>;
    if (drones.some((row) => row.name === name && row.status === "online")) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const onlineAt = performance.now();
  return {
    onlineAt,
    stop: async () => {
      drone.kill("SIGTERM");
      await exited;
    },
  };
}

async function main(): Promise<void> {
  const root = await mkdtemp(path.join(tmpdir(), "gadget-install-bench-"));
  const services = await startServices({
    rootDir: findRepoRoot(),
    dataDir: path.join(root, "services"),
    mongoUrl: process.env.MONGO_URL,
    redisUrl: process.env.REDIS_URL,
  });
  const server = await startTestServer(
    {
      mongoUrl: services.mongoUrl,
      redisUrl: services.redisUrl,
      droneGraceMs: 60_000,
      dronePackage: packDrone(path.join(root, "package")),
    },
    `install_bench_${process.pid}`,
  );
  try {
    const user = await signup(server.url, "install-bench");
    const info = (await user.get("/downloads/gadget-drone.json")).body as {
      url: string;
      size: number;
    };
    const line: number[] = [];
    const byHand: number[] = [];
    for (let round = 0; round < rounds * 2; round++) {
      const home = path.join(root, `home-${round}`);
      await mkdir(home);
      const env = { HOME: home, PATH: process.env.PATH ?? "", TMPDIR: home };
      const name = `bench-${round}`;
      const token = (await user.post("/api/drones/registration-tokens")).body as {
        token: string;
        install: string;
      };
      const started = performance.now();
      let bin: string;
      if (round % 2 === 0) {
        await run("sh", ["-c", `${token.install} --name ${name}`], env);
        bin = path.join(home, ".local/bin/gadget-drone");
      } else {
        // By hand: npm's own cache in the fresh HOME, as on a new machine.
        const prefix = path.join(home, ".npm-global");
        await run(
          "npm",
          ["install", "--global", "--prefix", prefix, "--no-audit", "--no-fund", info.url],
          env,
        );
        bin = path.join(prefix, "bin/gadget-drone");
        await run(
          bin,
          ["register", "--server", server.url, "--token", token.token, "--name", name],
          env,
        );
      }
      const drone = await startUntilOnline(user, bin, name, env);
      (round % 2 === 0 ? line : byHand).push(drone.onlineAt - started);
      await drone.stop();
    }
    const [a, b] = [summarize(line), summarize(byHand)];
    const cell = (value: number) => `${(value / 1000).toFixed(2)} s`;
    console.log(
      `\nInstall → online: ${rounds} rounds each, interleaved; package ${(info.size / 1024).toFixed(0)} KiB from a local server\n`,
    );
    console.log(
      markdownTable(
        [
          "measure",
          "the install line + start",
          "npm install -g + register + start (baseline)",
          "ratio",
        ],
        [
          ["p50", cell(a.p50), cell(b.p50), `${(a.p50 / b.p50).toFixed(2)}×`],
          ["p95", cell(a.p95), cell(b.p95), `${(a.p95 / b.p95).toFixed(2)}×`],
        ],
      ),
    );
  } finally {
    await server.close();
    await services.stop();
    await rm(root, { recursive: true, force: true });
  }
}

await main();
