// Loaded into a benchmarked server process (`--import`) by `bench/run.ts dispatch --explain`: logs
// every MongoDB command (the driver's command monitoring) and every Redis command the process
// sends, with when it started and how long it took, to `$BENCH_COMMAND_LOG/<pid>.jsonl` every
// 100 ms, each once answered. Times are wall-clock milliseconds (performance.timeOrigin + now), comparable with the
// bench's. Benchmark-only: nothing in src loads it.
import { appendFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

/** One command as logged: start (epoch ms), duration (ms), `mongo <command> <collection>` or `redis <command>`. */
export interface LoggedCommand {
  at: number;
  ms: number;
  name: string;
}

const directory = process.env.BENCH_COMMAND_LOG;
if (directory) {
  const file = path.join(directory, `${process.pid}.jsonl`);
  let pending: LoggedCommand[] = [];
  const clock = () => performance.timeOrigin + performance.now();
  // Logged once answered, so every line has its duration.
  const log = (name: string, at: number) => (end: number) => {
    pending.push({ at, ms: end - at, name });
  };
  // The driver and ioredis the server uses, resolved from the server's own directory.
  const require = createRequire(path.join(process.cwd(), "package.json"));
  const mongodb = require(require.resolve("mongodb", { paths: [require.resolve("mongoose")] }));
  const { Redis } = require("ioredis") as typeof import("ioredis");

  // Command monitoring on every client the process makes (mongoose connects through `connect`).
  const connect = mongodb.MongoClient.prototype.connect;
  const quiet = new Set(["hello", "isMaster", "ismaster", "ping", "endSessions", "buildInfo"]);
  mongodb.MongoClient.prototype.connect = function (
    this: {
      monitorCommands: boolean;
      on(event: string, listener: (event: Record<string, unknown>) => void): void;
    },
    ...args: unknown[]
  ) {
    this.monitorCommands = true;
    const started = new Map<number, (end: number) => void>();
    this.on("commandStarted", (event) => {
      const commandName = String(event.commandName);
      if (quiet.has(commandName)) return;
      const command = event.command as Record<string, unknown>;
      const target = typeof command[commandName] === "string" ? ` ${command[commandName]}` : "";
      // An update or insert of several documents says how many (a bulkWrite of N updates).
      const many =
        (command.updates as unknown[] | undefined)?.length ??
        (command.documents as unknown[] | undefined)?.length ??
        (command.deletes as unknown[] | undefined)?.length ??
        1;
      started.set(
        event.requestId as number,
        log(`mongo ${commandName}${target}${many > 1 ? ` ×${many}` : ""}`, clock()),
      );
    });
    const ended = (event: Record<string, unknown>) => {
      started.get(event.requestId as number)?.(clock());
      started.delete(event.requestId as number);
    };
    this.on("commandSucceeded", ended);
    this.on("commandFailed", ended);
    return connect.apply(this, args);
  };

  // Blocking reads (a worker waiting for jobs, subscriptions) are not commands of a dispatch.
  const blocking = new Set(["subscribe", "psubscribe", "ssubscribe", "bzpopmin", "bzpopmax"]);
  const sendCommand = Redis.prototype.sendCommand;
  Redis.prototype.sendCommand = function (this: InstanceType<typeof Redis>, ...args) {
    const result = sendCommand.apply(this, args);
    const command = args[0] as unknown as {
      name: string;
      args: unknown[];
      promise: Promise<unknown>;
    };
    if (!blocking.has(command.name)) {
      const done = log(`redis ${command.name}${scriptKey(command)}`, clock());
      const end = () => done(clock());
      command.promise.then(end, end);
    }
    return result;
  } as typeof sendCommand;

  setInterval(() => {
    if (pending.length === 0) return;
    const lines = pending.map((entry) => JSON.stringify(entry)).join("\n");
    pending = [];
    appendFileSync(file, `${lines}\n`);
  }, 100).unref();
}

/** A script's first key with its prefix, ids and hashes blanked (which script ran): ` turn-seq:*`. */
function scriptKey(command: { name: string; args: unknown[] }): string {
  if (command.name !== "eval" && command.name !== "evalsha") return "";
  const key = Number(command.args[1]) > 0 ? String(command.args[2]) : "(no keys)";
  return ` ${key.replace(/^\{[^}]*\}:/, "").replace(/[0-9a-f]{24}|[0-9a-f-]{36}/g, "*")}`;
}
