// What one server instance needs to run; env.ts builds it from the environment, tests build it directly.
import type { Logger } from "@gadget/logging";

export interface ServerConfig {
  /** Port to listen on; 0 picks a free one (tests). Default 3000. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** The URL drones and browsers use; default `http://<host>:<port>`. Goes into `register` commands. */
  publicUrl?: string;
  /** MongoDB URL naming the database. */
  mongoUrl: string;
  redisUrl: string;
  /** Prefix of every Redis key and channel, so several deployments (or test files) share one Redis. Default "gadget". */
  redisPrefix?: string;
  /** Encrypts provider API keys at rest. */
  secret: string;
  logger?: Logger;
  /** How long a turn waits for its drone to come back before it is `interrupted`; default 60 000 ms. */
  droneGraceMs?: number;
  /** How often the lease sweeper and the queued-turn re-enqueue run; default 2 000 ms. */
  sweepIntervalMs?: number;
  /** How long a drone has to accept a work order; default 10 000 ms. */
  workOrderAckTimeoutMs?: number;
  /** How long a drone has to answer a cancel, approval or file request; default 10 000 ms. */
  droneRequestTimeoutMs?: number;
  /** A drone whose last heartbeat is older than this counts as offline; default 45 000 ms. */
  presenceStaleMs?: number;
  /** Lifetime of a registration token; default 15 minutes. */
  registrationTokenTtlMs?: number;
  /** Login attempts allowed per email (and 5× that per IP) in `windowMs`; default 10 per minute. */
  loginRateLimit?: { max: number; windowMs: number };
  /** How often a streaming turn's ChatTurn is written from its events at most; default 1 000 ms. */
  turnFlushIntervalMs?: number;
  /** How often a running turn's ChatTurn is pushed to browsers at most; default 250 ms. */
  turnUpdateIntervalMs?: number;
  /** Parallel dispatch jobs per server process; default 8. */
  dispatchConcurrency?: number;
  /** Largest REST body in bytes; default 12 MiB (file writes up to 10 MiB). */
  bodyLimitBytes?: number;
  /**
   * Which proxies' X-Forwarded-For to believe (Fastify's trustProxy): false (default), true, or
   * addresses/CIDRs. Behind a load balancer, without it every user shares the proxy's login limit.
   */
  trustProxy?: boolean | string[];
  /** The web IDE build (apps/web/dist) served at `/`; null or absent serves none. */
  webDir?: string | null;
  /** Identifies this process in logs and presence; default a random id. */
  serverId?: string;
}

export type ResolvedConfig = Required<Omit<ServerConfig, "logger" | "publicUrl">> & {
  publicUrl: string | undefined;
};

/** Fills in defaults. */
export function resolveConfig(config: ServerConfig): ResolvedConfig {
  return {
    port: config.port ?? 3000,
    host: config.host ?? "127.0.0.1",
    publicUrl: config.publicUrl,
    mongoUrl: config.mongoUrl,
    redisUrl: config.redisUrl,
    redisPrefix: config.redisPrefix ?? "gadget",
    secret: config.secret,
    droneGraceMs: config.droneGraceMs ?? 60_000,
    sweepIntervalMs: config.sweepIntervalMs ?? 2_000,
    workOrderAckTimeoutMs: config.workOrderAckTimeoutMs ?? 10_000,
    droneRequestTimeoutMs: config.droneRequestTimeoutMs ?? 10_000,
    presenceStaleMs: config.presenceStaleMs ?? 45_000,
    registrationTokenTtlMs: config.registrationTokenTtlMs ?? 15 * 60_000,
    loginRateLimit: config.loginRateLimit ?? { max: 10, windowMs: 60_000 },
    turnFlushIntervalMs: config.turnFlushIntervalMs ?? 1_000,
    turnUpdateIntervalMs: config.turnUpdateIntervalMs ?? 250,
    dispatchConcurrency: config.dispatchConcurrency ?? 8,
    bodyLimitBytes: config.bodyLimitBytes ?? 12 * 1024 * 1024,
    webDir: config.webDir ?? null,
    trustProxy: config.trustProxy ?? false,
    serverId: config.serverId ?? `server-${Math.random().toString(36).slice(2, 10)}`,
  };
}
