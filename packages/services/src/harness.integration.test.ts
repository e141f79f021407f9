// The harness leaves no process behind: not on stop(), and not when its owner is SIGKILLed.
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { findRepoRoot } from "./repo-root.ts";
import { startServices } from "./services.ts";
import { pingRedis, waitUntil } from "./wire.ts";

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const directories: string[] = [];
async function tempDir() {
  const directory = await mkdtemp(path.join(tmpdir(), "gadget-harness-"));
  directories.push(directory);
  return directory;
}
afterAll(async () => {
  await Promise.all(
    directories.map((directory) => rm(directory, { recursive: true, force: true })),
  );
});

describe("service harness processes", () => {
  it("uses the URLs it is given and starts nothing for them", async () => {
    const services = await startServices({
      rootDir: findRepoRoot(),
      dataDir: await tempDir(),
      mongoUrl: "mongodb://127.0.0.1:1",
      redisUrl: "redis://127.0.0.1:2",
      startTimeoutMs: 300,
    }).catch((error: Error) => error);
    // Nothing answers there, so it reports which one did not answer rather than hanging.
    expect(services).toBeInstanceOf(Error);
    expect(String(services)).toMatch(/did not answer/);
  });

  it("starts private servers and stops every process it started", async () => {
    const services = await startServices({ rootDir: findRepoRoot(), dataDir: await tempDir() });
    expect(services.pids.length).toBe(2);
    expect(services.pids.every(alive)).toBe(true);
    await pingRedis(services.redisUrl);
    await services.stop();
    expect(services.pids.some(alive)).toBe(false);
  });

  it("leaves no orphans when the process that started them is SIGKILLed", async () => {
    const script = path.join(
      path.dirname(fileURLToPath(import.meta.url)),
      "__fixtures__",
      "start-and-wait.ts",
    );
    const child = spawn(process.execPath, ["--import", "tsx", script, await tempDir()], {
      cwd: findRepoRoot(),
      stdio: ["ignore", "pipe", "inherit"],
    });
    const pids = await new Promise<number[]>((resolve, reject) => {
      let output = "";
      child.stdout.on("data", (chunk) => {
        output += String(chunk);
        const line = output.split("\n").find((candidate) => candidate.startsWith("PIDS "));
        if (line) resolve(line.slice(5).split(",").map(Number));
      });
      child.on("exit", (code) => reject(new Error(`fixture exited early with ${code}`)));
    });
    expect(pids.every(alive)).toBe(true);
    child.kill("SIGKILL");
    await waitUntil(
      "the orphaned servers to stop",
      async () => {
        if (pids.some(alive)) throw new Error(`still alive: ${pids.filter(alive).join(", ")}`);
      },
      15_000,
    );
    expect(pids.some(alive)).toBe(false);
  });
});
