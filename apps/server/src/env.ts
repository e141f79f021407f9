// The only place that reads process.env: the server's environment (docs/configuration.md), parsed and validated at start.
import path from "node:path";
import { UserError } from "@gadget/protocol";
import {
  environmentProblems,
  findRepoRoot,
  sharedDefaults,
  sharedEnvironmentSchema,
} from "@gadget/services";
import { z } from "zod";
import { serverDefaults } from "./config.ts";
import { loadOrCreateSecret } from "./crypto/secret-file.ts";
import { parseRedisUrl } from "./redis/redis-url.ts";

const milliseconds = z.coerce
  .number({ error: "must be a number of milliseconds" })
  .int("must be a whole number of milliseconds")
  .min(1, "must be at least 1 ms");

// The variables `pnpm start` reads too come from their shared schema; the rest are the server's.
const envSchema = sharedEnvironmentSchema.extend({
  NODE_ENV: z.string().default("development"),
  PUBLIC_URL: z.url({ protocol: /^https?$/ }).optional(),
  GADGET_SECRET: z.string().min(32, "must be at least 32 characters").optional(),
  GADGET_WEB_DIR: z.string().min(1).optional(),
  GADGET_DRONE_PACKAGE: z.string().min(1).optional(),
  GADGET_TRUST_PROXY: z
    .string()
    .regex(/^(true|false|[0-9a-fA-F.:/]+(,[0-9a-fA-F.:/]+)*)$/, {
      error: 'must be "true", "false" or proxy addresses/CIDRs separated by commas',
    })
    .optional(),
  GADGET_REDIS_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_.-]+$/)
    .default(serverDefaults.redisPrefix),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  DRONE_GRACE_MS: milliseconds.default(serverDefaults.droneGraceMs),
  GADGET_STOP_TIMEOUT_MS: milliseconds.default(serverDefaults.stopTimeoutMs),
  GADGET_SIGNUP: z.enum(["open", "invite", "closed"]).optional(),
  GADGET_TOKEN_TTL_DAYS: z.coerce
    .number({ error: "must be a number of days" })
    .positive("must be more than 0")
    .max(3650)
    .default(serverDefaults.tokenTtlDays),
  GADGET_ALLOW_PRIVATE_NETWORK: z.enum(["true", "false"]).optional(),
});

export interface ServerEnv {
  nodeEnv: string;
  port: number;
  host: string;
  publicUrl: string | undefined;
  mongoUrl: string | undefined;
  redisUrl: string | undefined;
  secret: string;
  dataDir: string;
  /** Proxies whose X-Forwarded-For is believed. */
  trustProxy: boolean | string[];
  /** The web IDE build served at `/`. */
  webDir: string;
  /**
   * GADGET_DRONE_PACKAGE: the drone package to hand out (a .tgz, or a directory: its newest);
   * unset: built from this checkout into GADGET_DATA_DIR/drone-package when missing or stale.
   */
  dronePackage: string | undefined;
  redisPrefix: string;
  logLevel: string;
  droneGraceMs: number;
  /** A stop still under way after this long ends the process (exit 1), naming the step it was at. */
  stopTimeoutMs: number;
  /** Who may sign up: anyone, holders of an invite, or nobody (accounts made with the CLI). */
  signup: "open" | "invite" | "closed";
  /** A token unused for this long stops working. */
  tokenTtlDays: number;
  /** Whether requests the server sends out may reach loopback and private addresses. */
  allowPrivateNetwork: boolean;
}

/** A bad environment: one line per offending variable. */
export class EnvError extends UserError {
  constructor(readonly problems: string[]) {
    super(
      "invalid_environment",
      `Invalid environment:\n${problems.map((problem) => `  ${problem}`).join("\n")}`,
    );
  }
}

/** The server's environment, read from this process: the one place the server reads it. */
export function loadProcessEnv(): ServerEnv {
  return loadEnv(process.env);
}

/**
 * Parses the server environment; throws EnvError naming every bad variable.
 * @example const env = loadEnv(process.env);
 */
export function loadEnv(source: NodeJS.ProcessEnv): ServerEnv {
  const result = envSchema.safeParse(source);
  const problems = result.success
    ? []
    : environmentProblems(result.error, source, ["GADGET_SECRET", "REDIS_URL"]);
  if (source.NODE_ENV === "production" && !source.GADGET_SECRET) {
    problems.push(
      "GADGET_SECRET: is required when NODE_ENV=production (it encrypts provider API keys at rest)",
    );
  }
  // The private services started for an unset MONGO_URL expect one plain Redis beside them.
  if (result.success && result.data.REDIS_URL && !result.data.MONGO_URL) {
    if (parseRedisUrl(result.data.REDIS_URL).kind !== "single") {
      problems.push("MONGO_URL: is required when REDIS_URL names a Redis Cluster or Sentinel");
    }
  }
  if (!result.success || problems.length > 0) throw new EnvError(problems);
  const env = result.data;
  const dataDir = env.GADGET_DATA_DIR ?? sharedDefaults.dataDir(findRepoRoot());
  return {
    nodeEnv: env.NODE_ENV,
    port: env.PORT,
    host: env.HOST,
    publicUrl: env.PUBLIC_URL,
    mongoUrl: env.MONGO_URL,
    redisUrl: env.REDIS_URL,
    secret: env.GADGET_SECRET ?? loadOrCreateSecret(dataDir),
    dataDir,
    trustProxy: parseTrustProxy(env.GADGET_TRUST_PROXY),
    webDir: path.resolve(env.GADGET_WEB_DIR ?? path.join(findRepoRoot(), "apps/web/dist")),
    dronePackage: env.GADGET_DRONE_PACKAGE ? path.resolve(env.GADGET_DRONE_PACKAGE) : undefined,
    redisPrefix: env.GADGET_REDIS_PREFIX,
    logLevel: env.LOG_LEVEL,
    droneGraceMs: env.DRONE_GRACE_MS,
    stopTimeoutMs: env.GADGET_STOP_TIMEOUT_MS,
    // Closed in production unless said otherwise: whoever reaches the server could register drones.
    signup: env.GADGET_SIGNUP ?? (env.NODE_ENV === "production" ? "closed" : serverDefaults.signup),
    tokenTtlDays: env.GADGET_TOKEN_TTL_DAYS,
    allowPrivateNetwork: env.GADGET_ALLOW_PRIVATE_NETWORK === "true",
  };
}

function parseTrustProxy(value: string | undefined): boolean | string[] {
  if (value === undefined || value === "false") return false;
  if (value === "true") return true;
  return value.split(",");
}
