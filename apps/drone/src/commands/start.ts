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
import { hostEnvironment } from "../env.ts";
import { automaticLabels } from "../labels.ts";
import { McpManager } from "../mcp/mcp-manager.ts";
import { ownIdentity } from "../process-identity.ts";
import { describeSandbox, openSandbox } from "../sandbox.ts";
import { Terminal } from "../terminal.ts";
import { AutoUpdater } from "../update/auto-update.ts";
import { type Installation, switchTo } from "../update/installation.ts";
import { restartForUpdate } from "../update/supervisor.ts";
import { WorktreePruner } from "../workspace/prune.ts";
import { type RuntimeStatus, runtimeFile } from "./status.ts";

export interface StartOptions {
  config: string;
  json: boolean;
  version: string;
  logLevel: string;
  /** Run commands unconfined (the machine has no usable sandbox, and the user said so). */
  noSandbox: boolean;
  /** Lease renewal period; default 10 000 ms. */
  heartbeatMs?: number | undefined;
  /** How long turns wait out an unavailable server; default 5 minutes. */
  patienceMs?: number | undefined;
  /** How long, in all, a turn waits out a provider's rate limit; default 6 hours. */
  maxQuotaWaitMs?: number | undefined;
  /** Days an unused session worktree is kept; default: the config's, else 7. */
  worktreeRetentionDays?: number | undefined;
  /** Take exactly one turn, see it through, then exit 0 (the server unregisters the drone). */
  ephemeral?: boolean | undefined;
  /** Minutes a session's MCP servers run without a turn; default: the config's, else 10. */
  mcpIdleMinutes?: number | undefined;
  /** Seconds an MCP server may take to start; default: the config's, else 10. */
  mcpTimeoutSeconds?: number | undefined;
  /** `--auto-update` under its supervisor: switch to the server's newer package between turns. */
  autoUpdate?: { installation: Installation; intervalMs: number } | undefined;
}

/** Resolves once no turn runs (checked every 200 ms). */
async function idle(drone: Drone): Promise<void> {
  while (drone.turns.size > 0) await new Promise((resolve) => setTimeout(resolve, 200));
}

const dayMs = 86_400_000;

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
  // Before anything connects: no sandbox and no --no-sandbox is a refusal that says what to install.
  const confinement = await openSandbox(config, options.config, { noSandbox: options.noSandbox });
  const logger = openLogger(options);
  const terminal = new Terminal(options.json ? { write: () => {}, isTTY: false } : process.stderr);
  let connected = false;
  const sandboxLine = describeSandbox(confinement.sandbox.info, confinement.processLimit);
  terminal.say(`sandbox: ${sandboxLine}`);
  if (confinement.sandbox.info.kind === "none") {
    terminal.say(
      "WARNING: commands the agent runs are not confined: they can read your files and reach your network",
    );
  }
  logger.info(
    { sandbox: confinement.sandbox.info, processLimit: confinement.processLimit },
    "sandbox",
  );

  const pruner = new WorktreePruner({
    workspaceRoot: config.workspace,
    retentionMs: (options.worktreeRetentionDays ?? config.worktreeRetentionDays ?? 7) * dayMs,
    logger,
  });

  const mcp = new McpManager({
    logger,
    env: hostEnvironment(),
    idleMs: (options.mcpIdleMinutes ?? config.mcpIdleMinutes ?? 10) * 60_000,
    startTimeoutMs: (options.mcpTimeoutSeconds ?? config.mcpTimeoutSeconds ?? 10) * 1000,
    version: options.version,
  });

  const drone = new Drone({
    config,
    mcp,
    sandbox: confinement.sandbox,
    hiddenPaths: confinement.hidden,
    version: options.version,
    hostname: hostname(),
    platform: `${platform()}-${process.arch}`,
    labels: automaticLabels({
      platform: process.platform,
      arch: process.arch,
      sandboxKind: confinement.sandbox.info.kind,
    }),
    ephemeral: options.ephemeral ?? false,
    logger,
    ...(options.heartbeatMs ? { heartbeatMs: options.heartbeatMs } : {}),
    ...(options.patienceMs ? { sending: { patienceMs: options.patienceMs } } : {}),
    ...(options.maxQuotaWaitMs === undefined
      ? {}
      : { tunables: { retry: { maxQuotaWaitMs: options.maxQuotaWaitMs } } }),
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
    const identity = await ownIdentity();
    const runtime: RuntimeStatus = {
      pid: process.pid,
      ...(identity ? { identity } : {}),
      connected,
      sandbox: sandboxLine,
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

  const updater = options.autoUpdate
    ? new AutoUpdater({
        installation: options.autoUpdate.installation,
        server: config.server,
        intervalMs: options.autoUpdate.intervalMs,
        logger,
        say: (line) => terminal.say(line),
        onRefused: (refusal) => drone.reportUpdateRefused(refusal),
      })
    : null;
  // Ready to switch: once no turn runs, take no new one, switch, and let the supervisor restart.
  const updated = updater
    ? updater.ready.then(async (version) => {
        terminal.say(`update: gadget-drone ${version} is ready; switching once no turn runs`);
        await idle(drone);
        await drone.shutdown({ cancel: false });
        await switchTo(options.autoUpdate!.installation, version);
        terminal.say(`update: switched to gadget-drone ${version}; restarting`);
        return { error: undefined, restart: true };
      })
    : new Promise<never>(() => {});

  terminal.say(`connecting to ${config.server}…`);
  // Local housekeeping: it goes on while the server is unreachable.
  pruner.start();
  mcp.start();
  try {
    // Stopped before it ever connected (a server that is down): a clean stop all the same.
    const began = await Promise.race([
      drone.start().then(() => "connected" as const),
      drone.stopped.then((error) => Promise.reject(error)),
      shutdownDone.then(() => "stopped" as const),
    ]);
    if (began === "stopped") {
      terminal.say("stopped");
      return 0;
    }
    await saveRuntime();
    if (options.ephemeral) terminal.say("ephemeral: taking one turn, then exiting");
    updater?.start();
    const outcome: { error: Error | undefined; restart?: boolean } = await Promise.race([
      updated,
      drone.stopped.then((error) => ({ error })),
      shutdownDone.then(() => ({ error: undefined })),
      // Its one turn ended and every event of it is stored: done (the server unregisters it).
      drone.spent.then(async () => {
        terminal.say("ephemeral: the turn has ended; exiting");
        await drone.shutdown({ cancel: false });
        return { error: undefined };
      }),
    ]);
    if (outcome.error) {
      terminal.say(outcome.error.message);
      return 1;
    }
    if (outcome.restart) return restartForUpdate;
    terminal.say("stopped");
    return 0;
  } catch (error) {
    terminal.say((error as Error).message);
    drone.close();
    return 1;
  } finally {
    updater?.stop();
    await mcp.close();
    await pruner.stop();
    terminal.close();
    await writeFile(
      runtimeFile(options.config),
      JSON.stringify({ pid: 0, connected: false, activeTurns: [] }),
    ).catch(() => {});
    await new Promise<void>((resolve) => logger.flush(() => resolve()));
    // The signal handlers stay: the process exits as this returns (main.ts), and without them a
    // signal still on its way (Ctrl-C reaches pnpm too, which passes it on a moment later) would
    // meet the default action and end a clean stop as killed by SIGINT.
  }
}
