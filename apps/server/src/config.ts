// What one server instance needs to run; env.ts builds it from the environment, tests build it directly.
import type { Logger } from "@gadget/logging";
import { sharedDefaults } from "@gadget/services";
import { defaultPasswordCost, type PasswordCost } from "./auth/passwords.ts";

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
  /**
   * `max` wrong passwords for one email from one address cost nothing; each one after waits
   * longer (1 s, doubling, up to 15 min), and never for the owner at another address. An address
   * may try 10 × `max` logins (and sign-ups) per `windowMs`. Default 5 and one minute.
   */
  loginRateLimit?: { max: number; windowMs: number };
  /** How often a streaming turn's ChatTurn is written from its events at most; default 1 000 ms. */
  turnFlushIntervalMs?: number;
  /** How often a running turn's ChatTurn is pushed to browsers at most; default 250 ms. */
  turnUpdateIntervalMs?: number;
  /** Parallel dispatch jobs per server process; default 8. */
  dispatchConcurrency?: number;
  /**
   * Largest REST body in bytes of routes that do not set their own; default 1 MiB (sign-up and
   * login take 16 KiB, a file write 12 MiB after its token was checked).
   */
  bodyLimitBytes?: number;
  /**
   * Which proxies' X-Forwarded-For to believe (Fastify's trustProxy): false (default), true, or
   * addresses/CIDRs. Behind a load balancer, without it every user shares the proxy's login limit.
   */
  trustProxy?: boolean | string[];
  /** The web IDE build (apps/web/dist) served at `/`; null or absent serves none. */
  webDir?: string | null;
  /**
   * The drone package (`gadget-drone-<version>.tgz`) served at /downloads for /install.sh and
   * `gadget-drone update`, or a directory whose newest one is served; null or absent serves none.
   */
  dronePackage?: string | null;
  /** Identifies this process in logs and presence; default a random id. */
  serverId?: string;
  /**
   * How long an idempotent write (events, a turn's update) is retried while the database is
   * unavailable before the caller is answered `unavailable` (drones retry then); default 5 000 ms.
   */
  storageRetryMs?: number;
  /** How long a Redis command waits for Redis (e.g. to reconnect) before it fails; default 10 000 ms. */
  redisCommandTimeoutMs?: number;
  /** Who may sign up: "open" (default), "invite" (with an admin's invite), "closed". */
  signup?: "open" | "invite" | "closed";
  /** A token unused for this many days stops working; default 30. */
  tokenTtlDays?: number;
  /**
   * Whether requests the server sends out (provider checks) may reach loopback, link-local,
   * private and metadata addresses; default false.
   */
  allowPrivateNetwork?: boolean;
  /** How many times a webhook delivery is tried before it counts as failed; default 8. */
  webhookAttempts?: number;
  /** The first retry's delay of a webhook delivery, doubling after each; default 1 000 ms. */
  webhookRetryDelayMs?: number;
  /** Per-user limits: queued turns, projects, providers, live registration tokens, webhooks. */
  quotas?: Partial<UserQuotas>;
  /** scrypt's cost for new password hashes; default OWASP's N=2^17, r=8, p=1 (tests lower it). */
  passwordCost?: PasswordCost;
}

/** What one user may have at once; past it the API answers 429 naming the limit. */
export interface UserQuotas {
  queuedTurns: number;
  projects: number;
  providers: number;
  registrationTokens: number;
  webhooks: number;
}

export const defaultQuotas: UserQuotas = {
  queuedTurns: 100,
  projects: 500,
  providers: 100,
  registrationTokens: 20,
  webhooks: 20,
};

export type ResolvedConfig = Required<Omit<ServerConfig, "logger" | "publicUrl" | "quotas">> & {
  publicUrl: string | undefined;
  quotas: UserQuotas;
};

/**
 * The server's defaults, written once: env.ts gives them to unset variables and resolveConfig to
 * unset fields (port and host are shared with `pnpm start`, in @gadget/services).
 */
export const serverDefaults = {
  port: sharedDefaults.port,
  host: sharedDefaults.host,
  redisPrefix: "gadget",
  droneGraceMs: 60_000,
  /** How long a stop may take before the process exits without finishing it (main.ts). */
  stopTimeoutMs: 25_000,
  signup: "open",
  tokenTtlDays: 30,
  allowPrivateNetwork: false,
} as const;

/** Fills in defaults. */
export function resolveConfig(config: ServerConfig): ResolvedConfig {
  return {
    port: config.port ?? serverDefaults.port,
    host: config.host ?? serverDefaults.host,
    publicUrl: config.publicUrl,
    mongoUrl: config.mongoUrl,
    redisUrl: config.redisUrl,
    redisPrefix: config.redisPrefix ?? serverDefaults.redisPrefix,
    secret: config.secret,
    droneGraceMs: config.droneGraceMs ?? serverDefaults.droneGraceMs,
    sweepIntervalMs: config.sweepIntervalMs ?? 2_000,
    workOrderAckTimeoutMs: config.workOrderAckTimeoutMs ?? 10_000,
    droneRequestTimeoutMs: config.droneRequestTimeoutMs ?? 10_000,
    presenceStaleMs: config.presenceStaleMs ?? 45_000,
    registrationTokenTtlMs: config.registrationTokenTtlMs ?? 15 * 60_000,
    loginRateLimit: config.loginRateLimit ?? { max: 5, windowMs: 60_000 },
    turnFlushIntervalMs: config.turnFlushIntervalMs ?? 1_000,
    turnUpdateIntervalMs: config.turnUpdateIntervalMs ?? 250,
    dispatchConcurrency: config.dispatchConcurrency ?? 8,
    bodyLimitBytes: config.bodyLimitBytes ?? 1024 * 1024,
    webDir: config.webDir ?? null,
    dronePackage: config.dronePackage ?? null,
    trustProxy: config.trustProxy ?? false,
    serverId: config.serverId ?? `server-${Math.random().toString(36).slice(2, 10)}`,
    storageRetryMs: config.storageRetryMs ?? 5_000,
    redisCommandTimeoutMs: config.redisCommandTimeoutMs ?? 10_000,
    signup: config.signup ?? serverDefaults.signup,
    tokenTtlDays: config.tokenTtlDays ?? serverDefaults.tokenTtlDays,
    allowPrivateNetwork: config.allowPrivateNetwork ?? serverDefaults.allowPrivateNetwork,
    webhookAttempts: config.webhookAttempts ?? 8,
    webhookRetryDelayMs: config.webhookRetryDelayMs ?? 1_000,
    quotas: { ...defaultQuotas, ...config.quotas },
    passwordCost: config.passwordCost ?? defaultPasswordCost,
  };
}
