// The install line on a second machine, to a completed turn: a network namespace with its own
// address, reaching the server over a veth pair, with its own empty HOME and prefix, runs exactly
// the line the server gives (`curl … | sh -s -- --token …`), then `gadget-drone start`. Where
// network namespaces cannot be made, the same runs on this host with a separate HOME and prefix.
import { type ChildProcess, execFile, execFileSync, spawn, spawnSync } from "node:child_process";
import path from "node:path";
import type { GadgetServer } from "@gadget/server";
import { startTestServer } from "@gadget/server/testing";
import {
  makeTempDir,
  makeTempDirSync,
  packDrone,
  type ScriptedModel,
  startScriptedModel,
} from "@gadget/testkit";
import { type ApiClient, signup, waitFor } from "@gadget/testkit/wire";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createProjectSession, waitForTurn } from "./helpers.ts";

const dronePackage = packDrone(makeTempDirSync("drone-package-"));

/** A second host: a network namespace joined to this one by a veth pair. */
interface Host {
  /** Prefix of every command run "on" it. */
  run: string[];
  /** The address this host has on the link (the server and model listen there). */
  serverAddress: string;
  /** Why there is none, when the test runs on this host instead. */
  missing?: string;
  remove(): void;
}

/** Runs a command to its end without blocking this process (the server under test runs here). */
function run(
  command: string[],
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      command[0]!,
      command.slice(1),
      { encoding: "utf8", timeout: 60_000 },
      (error, stdout, stderr) =>
        resolve({ status: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

function makeHost(): Host {
  const tag = String(process.pid % 100_000);
  const namespace = `gadget-host-${tag}`;
  const [outside, inside] = [`gdh${tag}a`, `gdh${tag}b`];
  const subnet = `10.213.${process.pid % 250}`;
  const ip = (...args: string[]) => execFileSync("ip", args, { stdio: "pipe" });
  const remove = () => {
    spawnSync("ip", ["netns", "del", namespace]);
    spawnSync("ip", ["link", "del", outside]);
  };
  try {
    remove();
    ip("netns", "add", namespace);
    ip("link", "add", outside, "type", "veth", "peer", "name", inside);
    ip("link", "set", inside, "netns", namespace);
    ip("addr", "add", `${subnet}.1/30`, "dev", outside);
    ip("link", "set", outside, "up");
    ip("netns", "exec", namespace, "ip", "addr", "add", `${subnet}.2/30`, "dev", inside);
    ip("netns", "exec", namespace, "ip", "link", "set", inside, "up");
    ip("netns", "exec", namespace, "ip", "link", "set", "lo", "up");
    return { run: ["ip", "netns", "exec", namespace], serverAddress: `${subnet}.1`, remove };
  } catch (error) {
    remove();
    const reason = (error as { stderr?: Buffer }).stderr?.toString().trim() || String(error);
    return { run: [], serverAddress: "127.0.0.1", missing: reason, remove: () => {} };
  }
}

describe("the install line on a second host", () => {
  const host = makeHost();
  let server: GadgetServer;
  let model: ScriptedModel;
  let user: ApiClient;
  let drone: ChildProcess | undefined;
  let output = "";

  beforeAll(async () => {
    if (host.missing) {
      console.warn(
        `network namespaces cannot be made here (${host.missing}): the drone runs on this host with a separate HOME and prefix`,
      );
    }
    server = await startTestServer({
      mongoUrl: inject("mongoUrl"),
      redisUrl: inject("redisUrl"),
      host: host.serverAddress,
      droneGraceMs: 30_000,
      dronePackage,
    });
    model = await startScriptedModel({ host: host.serverAddress });
    user = await signup(server.url, "second-host");
  }, 60_000);

  afterAll(async () => {
    if (drone && drone.exitCode === null) {
      const exited = new Promise((resolve) => drone?.once("exit", resolve));
      drone.kill("SIGTERM");
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 15_000))]);
      drone.kill("SIGKILL");
    }
    await model?.close();
    await server?.close();
    host.remove();
  });

  it("installs from `curl … | sh`, registers, comes online and completes a turn", async () => {
    const { sessionId, providerId } = await createProjectSession(user, {
      name: "Second host",
      modelUrl: model.baseUrl,
    });
    const home = await makeTempDir("second-host-home-");
    // An empty HOME and nothing of this shell's environment but PATH (node, curl, git, bwrap).
    const environment = ["env", "-i", `HOME=${home}`, `PATH=${process.env.PATH}`, `TMPDIR=${home}`];
    if (!host.missing) {
      // Another host: this one's loopback is not reachable from it.
      const loopback = spawnSync(
        host.run[0]!,
        [
          ...host.run.slice(1),
          "curl",
          "-fsS",
          "--max-time",
          "2",
          `http://127.0.0.1:${server.port}/healthz`,
        ],
        { encoding: "utf8" },
      );
      expect(loopback.status).not.toBe(0);
    }

    const created = await user.post("/api/drones/registration-tokens");
    const line = `${created.body.install} --name second-host`;
    expect(line).toContain(`curl -fsSL ${server.url}/install.sh | sh -s -- --token `);
    const installed = await run([...host.run, ...environment, "sh", "-c", line]);
    expect(installed.stderr).toContain("Installed gadget-drone 0.1.0");
    expect(installed.status).toBe(0);
    const start = installed.stdout.trim().split("\n").pop()?.trim() ?? "";
    expect(start).toBe(`${path.join(home, ".local/bin/gadget-drone")} start`);

    const status = await user.get(`/api/drones/registration-tokens/${created.body._id}`);
    expect(status.body).toMatchObject({ used: true, drone: { name: "second-host" } });

    const command = [...host.run, ...environment, ...start.split(" ")];
    drone = spawn(command[0]!, command.slice(1));
    drone.stdout?.on("data", (chunk) => {
      output += chunk;
    });
    drone.stderr?.on("data", (chunk) => {
      output += chunk;
    });
    await waitFor(
      async () =>
        ((await user.get("/api/drones")).body.drones as Array<Record<string, unknown>>).some(
          (row) => row.name === "second-host" && row.status === "online",
        ),
      30_000,
      "the second host's drone online",
    ).catch((error: Error) => {
      throw new Error(`${error.message}\n${output}`);
    });

    model.enqueue({ text: "Hello from the other machine." });
    const turn = await user.post(`/api/sessions/${sessionId}/turns`, {
      prompt: "Say hello",
      providerId,
    });
    const ended = await waitForTurn(user, turn.body.turn._id, [
      "completed",
      "failed",
      "interrupted",
      "cancelled",
    ]);
    expect(ended.status).toBe("completed");
    expect(ended.response).toBe("Hello from the other machine.");
  }, 90_000);
});
