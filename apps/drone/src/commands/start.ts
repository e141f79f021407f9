// `gadget-drone start`: connect and serve work orders until SIGINT/SIGTERM.
// Once: take no new work, let running turns finish, exit. Twice: cancel them, exit.
import { mkdirSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { hostname, platform } from "node:os";
import path from "node:path";
import { createLogger, type Logger } from "@gadget/logging";
import { pino } from "pino";
import { readConfig } from "../config.ts";
import { Drone } from "../drone.ts";
import { Terminal } from "../terminal.ts";
import { type RuntimeStatus, runtimeFile } from "./status.ts";

export interface StartOptions {
  config: string;
  json: boolean;
  version: string;
  logLevel: string;
  /** Lease renewal period; default 10 000 ms. */
  heartbeatMs?: number | undefined;
}

function openLogger(options: StartOptions): Logger {
  const directory = path.dirname(options.config);
  mkdirSync(directory, { recursive: true, mode: 0o700 });
  const file = pino.destination({
    dest: path.join(directory, "drone.log"),
    mkdir: true,
    sync: false,
  });
  const streams = [{ stream: file, level: options.logLevel as pino.Level }];
  if (options.json)
    streams.push({ stream: pino.destination(1), level: options.logLevel as pino.Level });
  return createLogger({
    name: "gadget-drone",
    level: options.logLevel,
    destination: pino.multistream(streams),
  });
}

/** Runs the drone; resolves with the process exit code. */
export async function start(options: StartOptions): Promise<number> {
  const config = await readConfig(options.config);
  const logger = openLogger(options);
  const terminal = new Terminal(options.json ? { write: () => {}, isTTY: false } : process.stderr);
  let connected = false;

  const drone = new Drone({
    config,
    version: options.version,
    hostname: hostname(),
    platform: `${platform()}-${process.arch}`,
    logger,
    ...(options.heartbeatMs ? { heartbeatMs: options.heartbeatMs } : {}),
    onConnection: (state) => {
      if (state.connected !== connected || !state.connected) {
        terminal.say(
          state.connected
            ? `connected to ${config.server} as "${config.name}" (capacity ${config.capacity})`
            : `not connected: ${state.reason ?? "unknown reason"} — retrying`,
        );
      }
      connected = state.connected;
      void saveRuntime();
    },
    onProgress: (progress) => {
      terminal.progress(progress);
      void saveRuntime();
    },
    onTurnFinished: (turnId) => {
      terminal.finished(turnId);
      terminal.say(`turn ${turnId} finished`);
      void saveRuntime();
    },
  });

  const saveRuntime = async () => {
    const runtime: RuntimeStatus = {
      pid: process.pid,
      connected,
      activeTurns: [...drone.turns.values()].map((turn) => ({
        turnId: turn.turnId,
        project: turn.progress.project,
        pass: turn.progress.pass,
        phase: turn.progress.phase,
      })),
      updatedAt: new Date().toISOString(),
    };
    await writeFile(runtimeFile(options.config), JSON.stringify(runtime), { mode: 0o600 }).catch(
      () => {},
    );
  };

  // The first signal starts a graceful shutdown; a second one cancels what is still running.
  let signals = 0;
  let shutdownStarted: (done: Promise<void>) => void = () => {};
  const shutdownDone = new Promise<void>((resolve, reject) => {
    shutdownStarted = (done) => done.then(resolve, reject);
  });
  const onSignal = (signal: NodeJS.Signals) => {
    signals++;
    if (signals === 1) {
      terminal.say(
        drone.turns.size > 0
          ? `${signal}: taking no new work; waiting for ${drone.turns.size} turn(s) to finish (${signal} again cancels them)`
          : `${signal}: stopping`,
      );
      shutdownStarted(drone.shutdown({ cancel: false }));
    } else {
      terminal.say(`${signal} again: cancelling ${drone.turns.size} turn(s)`);
      void drone.shutdown({ cancel: true });
    }
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  terminal.say(`connecting to ${config.server}…`);
  try {
    await Promise.race([drone.start(), drone.stopped.then((error) => Promise.reject(error))]);
    await saveRuntime();
    const outcome = await Promise.race([
      drone.stopped.then((error) => ({ error })),
      shutdownDone.then(() => ({ error: undefined })),
    ]);
    if (outcome.error) {
      terminal.say(outcome.error.message);
      return 1;
    }
    terminal.say("stopped");
    return 0;
  } catch (error) {
    terminal.say((error as Error).message);
    drone.close();
    return 1;
  } finally {
    terminal.close();
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    await writeFile(
      runtimeFile(options.config),
      JSON.stringify({ pid: 0, connected: false, activeTurns: [] }),
    ).catch(() => {});
    await new Promise<void>((resolve) => logger.flush(() => resolve()));
  }
}
