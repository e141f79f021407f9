// The harness leaves no process behind: not on stop(), and not when its owner is SIGKILLed.
import { type ChildProcess, spawn } from "node:child_process";
import { accessSync, constants, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { findRepoRoot } from "./repo-root.ts";
import { startServices } from "./services.ts";
import { freePort, pingRedis, waitUntil } from "./wire.ts";

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

/**
 * Runs `script` (TypeScript, from the repository root) as the process that owns a server;
 * resolves with it and the pid it prints after `word` (and any pids after that one, on its line).
 */
async function startOwner(script: string, word: string) {
  const owner = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
    cwd: findRepoRoot(),
    stdio: ["ignore", "pipe", "inherit"],
  });
  const [pid, ...more] = await new Promise<number[]>((resolve, reject) => {
    let output = "";
    owner.stdout.on("data", (chunk) => {
      output += String(chunk);
      const match = new RegExp(`${word}((?: \\d+)+)\n`).exec(output);
      if (match?.[1]) resolve(match[1].trim().split(" ").map(Number));
    });
    owner.on("exit", (code) => reject(new Error(`owner exited early with ${code}`)));
  });
  return { owner, pid: pid as number, more };
}

/** Waits until `pid` has ended. */
function ended(what: string, pid: number): Promise<void> {
  return waitUntil(
    what,
    async () => {
      if (alive(pid)) throw new Error(`still alive: ${pid}`);
    },
    15_000,
  );
}

/** Whether this process may set the pid the kernel gives next (root, Linux). */
function canChooseNextPid(): boolean {
  try {
    accessSync("/proc/sys/kernel/ns_last_pid", constants.W_OK);
    return process.getuid?.() === 0;
  } catch {
    return false;
  }
}

/** Starts a detached `sleep` that the kernel gives `pid` (tried until no other process took it). */
async function spawnWithPid(pid: number): Promise<ChildProcess> {
  const lastPid = "/proc/sys/kernel/ns_last_pid";
  const before = Number(readFileSync(lastPid, "utf8"));
  try {
    for (let attempt = 0; attempt < 50; attempt++) {
      writeFileSync(lastPid, String(pid - 1));
      const child = spawn("sleep", ["600"], { detached: true, stdio: "ignore" });
      if (child.pid === pid) return child;
      child.kill("SIGKILL");
    }
    throw new Error(`pid ${pid} was taken by other processes 50 times`);
  } finally {
    // The kernel goes on from where it was: the other tests' processes get pids as before.
    if (Number(readFileSync(lastPid, "utf8")) < before) writeFileSync(lastPid, String(before));
  }
}

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

  it("stops them when the owner dies even though nobody reaps it (a zombie owner)", async () => {
    // An init that reaps orphans late (as on our CI machines) leaves a killed owner a zombie, which
    // still answers kill(pid, 0). Here its parent, a stopped shell, never reaps it.
    const script = path.join(
      path.dirname(fileURLToPath(import.meta.url)),
      "__fixtures__",
      "start-and-wait.ts",
    );
    const shell = `"$0" --import tsx "$1" "$2" & echo "OWNER $!"; kill -STOP $$; wait`;
    const parent = spawn("sh", ["-c", shell, process.execPath, script, await tempDir()], {
      cwd: findRepoRoot(),
      stdio: ["ignore", "pipe", "inherit"],
    });
    try {
      const { owner, pids } = await new Promise<{ owner: number; pids: number[] }>(
        (resolve, reject) => {
          let output = "";
          parent.stdout.on("data", (chunk) => {
            output += String(chunk);
            const owner = /OWNER (\d+)/.exec(output)?.[1];
            const line = output.split("\n").find((candidate) => candidate.startsWith("PIDS "));
            if (owner && line)
              resolve({ owner: Number(owner), pids: line.slice(5).split(",").map(Number) });
          });
          parent.on("exit", (code) => reject(new Error(`shell exited early with ${code}`)));
        },
      );
      expect(pids.every(alive)).toBe(true);
      process.kill(owner, "SIGKILL");
      await waitUntil(
        "the owner to be a zombie",
        async () => {
          const state = (await readFile(`/proc/${owner}/stat`, "utf8")).split(" ")[2];
          if (state !== "Z") throw new Error(`owner state ${state}`);
        },
        5_000,
      );
      await waitUntil(
        "the zombie owner's servers to stop",
        async () => {
          if (pids.some(alive)) throw new Error(`still alive: ${pids.filter(alive).join(", ")}`);
        },
        15_000,
      );
    } finally {
      parent.kill("SIGKILL");
    }
  });

  it("ends what a wrapper started when the wrapper went first (tsx's server under pnpm start)", async () => {
    // The watched process is a wrapper (like tsx) that exits on SIGTERM; the program it started
    // ignores SIGTERM (a server still starting up). Only the process group reaches it.
    const wrapper = `(trap '' TERM; exec sleep 60) & echo "INNER $!"; trap 'exit 0' TERM; wait`;
    const owner = `
      import { spawn } from "node:child_process";
      import { startReaper } from "./packages/services/src/reaper.ts";
      const child = spawn("sh", ["-c", ${JSON.stringify(wrapper)}], { detached: true, stdio: ["ignore", "pipe", "ignore"] });
      child.stdout.pipe(process.stdout);
      startReaper([child.pid]);
      setInterval(() => {}, 1000);
    `;
    const { owner: child, pid: inner } = await startOwner(owner, "INNER");
    expect(alive(inner)).toBe(true);
    child.kill("SIGKILL");
    await ended("the wrapper's program to stop", inner);
  });

  // Root may choose the next pid (ns_last_pid, as CRIU does); this machine's pid_max is 32768,
  // and a loaded run's thousands of git and sandbox processes bring a pid round within minutes.
  it.skipIf(!canChooseNextPid())(
    "leaves alone a process that was given a watched pid after the watched one ended",
    async () => {
      // Two watched: the watchdog runs on while one lives, as a Redis Cluster's does.
      const owner = `
        import { spawn } from "node:child_process";
        import { startReaper } from "./packages/services/src/reaper.ts";
        const ended = spawn("sleep", ["600"], { detached: true, stdio: "ignore" });
        const other = spawn("sleep", ["600"], { detached: true, stdio: "ignore" });
        startReaper([ended.pid, other.pid]);
        console.log("PIDS " + ended.pid + " " + other.pid);
        setInterval(() => {}, 1000);
      `;
      const { owner: child, pid: watched, more } = await startOwner(owner, "PIDS");
      const other = more[0] as number;
      let newcomer: ChildProcess | undefined;
      try {
        // The watchdog has read both by now (at its start).
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        process.kill(watched, "SIGKILL");
        await ended("the watched process to end", watched);
        newcomer = await spawnWithPid(watched);
        // The watchdog looks twice a second: it has met the newcomer under the old pid.
        await new Promise((resolve) => setTimeout(resolve, 1_200));
        child.kill("SIGKILL");
        await ended("the other watched process to stop", other);
        // Past the watchdog's SIGKILL round (3 s after its SIGTERM).
        await new Promise((resolve) => setTimeout(resolve, 3_500));
        expect(alive(watched), "the newcomer holding the old pid").toBe(true);
      } finally {
        child.kill("SIGKILL");
        newcomer?.kill("SIGKILL");
      }
    },
  );

  it("ends a redis-server the same way: its command line kept, an empty argument and all", async () => {
    // What the launcher's kill-at-every-step test met: redis-server rewrote its command line, and
    // its `--save ""` left no trace in /proc, so the watchdog started before it never found it.
    const directory = await tempDir();
    const port = await freePort();
    const owner = `
      import { spawn } from "node:child_process";
      import { commandLineOf, startReaper } from "./packages/services/src/reaper.ts";
      import { redisServerArgs } from "./packages/services/src/redis-args.ts";
      const args = redisServerArgs(${port}, ${JSON.stringify(directory)});
      startReaper([], [commandLineOf("redis-server", args)]);
      const child = spawn("redis-server", args, { detached: true, stdio: "ignore" });
      console.log("SERVER " + child.pid);
      setInterval(() => {}, 1000);
    `;
    const { owner: child, pid: server } = await startOwner(owner, "SERVER");
    try {
      await waitUntil(
        "redis-server to answer",
        () => pingRedis(`redis://127.0.0.1:${port}`),
        15_000,
      );
      // Its watchdog has seen it by now (it looks twice a second); then the owner dies.
      await new Promise((resolve) => setTimeout(resolve, 1_200));
      child.kill("SIGKILL");
      await ended("redis-server to stop", server);
    } finally {
      child.kill("SIGKILL");
    }
  });

  it("ends a server its owner started after the watchdog, by its command line, when the owner dies before watching its pid", async () => {
    // The window `pnpm start` killed mid-start can hit: the server runs, its pid is watched by
    // nobody yet. Watched by its command line from before it started, it still stops.
    const seconds = String(600 + (process.pid % 300));
    const owner = `
      import { spawn } from "node:child_process";
      import { startReaper } from "./packages/services/src/reaper.ts";
      startReaper([], ["sleep ${seconds}"]);
      const child = spawn("sleep", ["${seconds}"], { detached: true, stdio: "ignore" });
      console.log("SERVER " + child.pid);
      setInterval(() => {}, 1000);
    `;
    const { owner: child, pid: server } = await startOwner(owner, "SERVER");
    expect(alive(server)).toBe(true);
    child.kill("SIGKILL");
    await ended("the server to stop", server);
  });
});
