// Every Redis connection of one server instance, made here and closed here: commands (with a
// timeout), the patient connections of publish/subscribe, and BullMQ's. Whoever needs one asks;
// nobody else calls `new Redis`. REDIS_URL names one Redis, a Redis Cluster or a Sentinel-watched
// master (redis-url.ts); every connection is made for that one target (decision 0054).
import type { Logger } from "@gadget/logging";
import { SystemError } from "@gadget/protocol";
import { Cluster, type ClusterOptions, Redis, type RedisOptions } from "ioredis";
import { parseRedisUrl, type RedisTarget } from "./redis-url.ts";

/** A connection to one Redis or to a Redis Cluster: the commands every part uses are the same. */
export type RedisClient = Redis | Cluster;

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
  readonly commands: RedisClient;
  /**
   * A Redis Cluster: publish/subscribe goes sharded (SPUBLISH/SSUBSCRIBE), so a message travels to
   * its channel's shard only instead of over the cluster bus to every node.
   */
  readonly sharded: boolean;
  private readonly target: RedisTarget;
  private readonly all: RedisClient[] = [];
  private lost = false;

  constructor(
    url: string,
    private readonly options: RedisConnectionsOptions,
  ) {
    this.target = parseRedisUrl(url);
    this.sharded = this.target.kind === "cluster";
    this.commands = this.track(
      this.connect({ maxRetriesPerRequest: null, commandTimeout: options.commandTimeoutMs }),
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
  patient(): RedisClient {
    return this.track(this.connect({ maxRetriesPerRequest: null }), "redis error");
  }

  /**
   * A connection for a BullMQ queue or worker, which must retry for ever (`label` names it in logs).
   * On a Cluster it skips the ready check: a worker awaits the Cluster's `connect()` each time it
   * renews its blocking connection, and ioredis (5.11 and 6.0) never settles that promise when
   * the check finds `cluster_state:fail` (it reconnects under a new promise instead). A renewal
   * during a master's failover left both servers' workers waiting on it for good, and their
   * queued turns with them (decision 0054).
   */
  forJobs(label: string): RedisClient {
    return this.track(
      this.connect({ maxRetriesPerRequest: null }, { enableReadyCheck: false }),
      `${label} redis error`,
    );
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

  /**
   * A new client for the target with `options` (a Cluster passes them to each node's connection)
   * and, on a Cluster, `cluster` for the Cluster itself.
   */
  private connect(options: RedisOptions, cluster: Partial<ClusterOptions> = {}): RedisClient {
    const target = this.target;
    const login: RedisOptions = {
      username: target.username,
      password: target.password,
      ...(target.tls ? { tls: {} } : {}),
    };
    switch (target.kind) {
      case "single":
        return new Redis(target.url, options);
      case "cluster":
        return new Cluster(target.nodes, {
          ...clusterOptions({ ...login, ...options }),
          ...cluster,
        });
      case "sentinel":
        return new Redis({
          ...login,
          ...options,
          sentinels: target.sentinels,
          name: target.masterName,
          db: target.db,
          enableTLSForSentinelMode: target.tls,
          // A dead master's connection closes; the reconnection asks the Sentinels again. (Their
          // +switch-master listener, `failoverDetector`, left a server's client failing for good
          // after a failover in one of our test runs.)
        });
    }
  }

  private track<Client extends RedisClient>(client: Client, message: string): Client {
    client.on("error", (error) => this.options.logger.warn({ err: error }, message));
    this.all.push(client);
    return client;
  }
}

/**
 * Resolves once `client` has passed its ready check. ioredis reconnects for ever, so an unreachable
 * Redis fails the start after `timeoutMs` instead of hanging it.
 */
export function whenReady(client: RedisClient, timeoutMs = 30_000): Promise<void> {
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

/**
 * A Cluster client that rides out a master's failover: a command to a node that died is retried
 * every 200 ms with a fresh slot map, up to 100 times (20 s, longer than a promotion takes), and
 * sharded subscriptions follow their slot to its new master.
 */
function clusterOptions(redisOptions: RedisOptions): ClusterOptions {
  return {
    redisOptions,
    shardedSubscribers: true,
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 200,
    retryDelayOnTryAgain: 200,
    maxRedirections: 100,
    // A topology change (a promoted replica) is noticed without waiting for a command to fail.
    slotsRefreshInterval: 2_000,
  };
}

/**
 * A server's Redis connections: the factory, its command client, and the three long-lived
 * connections of pub/sub (the adapter's publisher and subscriber, the live relay's subscriber).
 * Subscribers are returned ready: a SUBSCRIBE sent between "connect" and "ready" is written at
 * once (ioredis lets it through the handshake) and the ready check's INFO then fails in
 * subscriber mode, leaving the adapter and the relay deaf (acks time out, no live events).
 */
export async function openRedisConnections(url: string, options: RedisConnectionsOptions) {
  const connections = new RedisConnections(url, options);
  const [adapterPublisher, adapterSubscriber, relaySubscriber] = [1, 2, 3].map(() =>
    connections.patient(),
  ) as [RedisClient, RedisClient, RedisClient];
  await Promise.all([adapterSubscriber, relaySubscriber].map((client) => whenReady(client)));
  return { connections, adapterPublisher, adapterSubscriber, relaySubscriber };
}
