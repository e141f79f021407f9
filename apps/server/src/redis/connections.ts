// Every Redis connection of one server instance, made here and closed here: commands (with a
// timeout), the patient connections of publish/subscribe, and BullMQ's. Whoever needs one asks;
// nobody else calls `new Redis`.
import type { Logger } from "@gadget/logging";
import { SystemError } from "@gadget/protocol";
import { Redis } from "ioredis";

export interface RedisConnectionsOptions {
  /** How long a command waits for a reconnection before it fails (config `redisCommandTimeoutMs`). */
  commandTimeoutMs: number;
  logger: Logger;
}

export class RedisConnections {
  /**
   * For commands (not subscriptions). They wait for a reconnection instead of failing after a
   * number of retries, but never for longer than the command timeout: a short outage delays
   * requests, a long one answers `unavailable`.
   */
  readonly commands: Redis;
  private readonly all: Redis[] = [];
  private lost = false;

  constructor(
    private readonly url: string,
    private readonly options: RedisConnectionsOptions,
  ) {
    this.commands = this.track(
      new Redis(url, {
        maxRetriesPerRequest: null,
        commandTimeout: options.commandTimeoutMs,
        lazyConnect: false,
      }),
      "redis error",
    );
    this.commands.on("close", () => {
      this.lost = true;
    });
  }

  /**
   * A connection that queues what it sends while Redis is away instead of timing out: the
   * Socket.IO adapter publishes without handling a failure (a rejected publish would be an
   * unhandled rejection), and ioredis renews subscriptions on reconnect.
   */
  patient(): Redis {
    return this.track(this.commands.duplicate({ commandTimeout: undefined }), "redis error");
  }

  /** A connection for a BullMQ queue or worker, which must retry for ever (`label` names it in logs). */
  forJobs(label: string): Redis {
    return this.track(new Redis(this.url, { maxRetriesPerRequest: null }), `${label} redis error`);
  }

  /**
   * Calls `recovered` each time the command connection is ready again after it was lost: Redis
   * may have come back empty, and what lives only there must be rebuilt.
   */
  onReturn(recovered: () => void): void {
    this.commands.on("ready", () => {
      if (!this.lost) return;
      this.lost = false;
      recovered();
    });
  }

  /** Closes every connection made here. */
  async close(): Promise<void> {
    await Promise.all(this.all.map((client) => client.quit().catch(() => undefined)));
  }

  private track(client: Redis, message: string): Redis {
    client.on("error", (error) => this.options.logger.warn({ err: error }, message));
    this.all.push(client);
    return client;
  }
}

/**
 * Resolves once `client` has passed its ready check. ioredis reconnects for ever, so an unreachable
 * Redis fails the start after `timeoutMs` instead of hanging it.
 */
export function whenReady(client: Redis, timeoutMs = 30_000): Promise<void> {
  if (client.status === "ready") return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onReady = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      client.off("ready", onReady);
      reject(
        new SystemError("redis_unavailable", `Redis was not ready within ${timeoutMs / 1000} s`),
      );
    }, timeoutMs);
    client.once("ready", onReady);
  });
}
