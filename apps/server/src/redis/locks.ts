// Short Redis locks. FerretDB v1 runs every update as an unisolated read-modify-write, so all
// writes to one ChatTurn (or Drone) go through a lock shared by every server process.
import { randomUUID } from "node:crypto";
import { SystemError } from "@gadget/protocol";
import type { RedisClient } from "./connections.ts";
import { luaScript } from "./script.ts";

const releaseScript = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`;

export interface LockOptions {
  /** How long to keep trying before giving up with `unavailable`; default 10 s. */
  waitMs?: number;
  /** Expiry of the lock if its holder dies; default 15 s. */
  ttlMs?: number;
}

/** Mutual exclusion by key across processes, with an in-process queue so local waiters do not spin. */
export class Locks {
  private readonly local = new Map<string, Promise<void>>();
  private readonly release;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {
    this.release = luaScript(redis, "gadgetLockRelease", releaseScript);
  }

  /**
   * Runs `work` while holding the lock named `name`.
   * @example await locks.with(`turn:${id}`, async () => { ...read, check, write... });
   */
  async with<T>(name: string, work: () => Promise<T>, options: LockOptions = {}): Promise<T> {
    const previous = this.local.get(name) ?? Promise.resolve();
    let releaseLocal!: () => void;
    const mine = new Promise<void>((resolve) => {
      releaseLocal = resolve;
    });
    const chained = previous.then(() => mine);
    this.local.set(name, chained);
    try {
      await previous;
      return await this.withRedis(name, work, options);
    } finally {
      releaseLocal();
      if (this.local.get(name) === chained) this.local.delete(name);
    }
  }

  private async withRedis<T>(
    name: string,
    work: () => Promise<T>,
    options: LockOptions,
  ): Promise<T> {
    const key = `${this.prefix}:lock:${name}`;
    const token = randomUUID();
    const ttlMs = options.ttlMs ?? 15_000;
    const deadline = Date.now() + (options.waitMs ?? 10_000);
    let delay = 2;
    while ((await this.redis.set(key, token, "PX", ttlMs, "NX")) !== "OK") {
      if (Date.now() > deadline) {
        throw new SystemError("unavailable", `Busy: could not lock ${name}; try again`);
      }
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, 50);
    }
    try {
      return await work();
    } finally {
      await this.release([key], token).catch(() => undefined);
    }
  }
}
