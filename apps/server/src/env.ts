// The only place that reads process.env: SPEC.md's server environment, parsed and validated at start.
import path from "node:path";
import { findRepoRoot } from "@gadget/services";
import { z } from "zod";
import { loadOrCreateSecret } from "./crypto/secret-file.ts";

const port = z.coerce
  .number({ error: "must be a port number (0-65535)" })
  .int("must be a whole number")
  .min(0, "must be a port number (0-65535)")
  .max(65535, "must be a port number (0-65535)");
const milliseconds = z.coerce
  .number({ error: "must be a number of milliseconds" })
  .int("must be a whole number of milliseconds")
  .min(1, "must be at least 1 ms");

const envSchema = z.object({
  NODE_ENV: z.string().default("development"),
  PORT: port.default(3000),
  HOST: z.string().min(1).default("127.0.0.1"),
  PUBLIC_URL: z.url({ protocol: /^https?$/ }).optional(),
  MONGO_URL: z
    .string()
    .regex(/^mongodb(\+srv)?:\/\//, "must start with mongodb://")
    .optional(),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, "must start with redis://")
    .optional(),
  GADGET_SECRET: z.string().min(32, "must be at least 32 characters").optional(),
  GADGET_DATA_DIR: z.string().min(1).optional(),
  GADGET_WEB_DIR: z.string().min(1).optional(),
  GADGET_TRUST_PROXY: z
    .string()
    .regex(/^(true|false|[0-9a-fA-F.:/]+(,[0-9a-fA-F.:/]+)*)$/, {
      error: 'must be "true", "false" or proxy addresses/CIDRs separated by commas',
    })
    .optional(),
  GADGET_REDIS_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_.-]+$/)
    .default("gadget"),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  DRONE_GRACE_MS: milliseconds.default(60_000),
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
  redisPrefix: string;
  logLevel: string;
  droneGraceMs: number;
}

/** A bad environment: one line per offending variable. */
export class EnvError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid environment:\n${problems.map((problem) => `  ${problem}`).join("\n")}`);
    this.name = "EnvError";
  }
}

/**
 * Parses the server environment; throws EnvError naming every bad variable.
 * @example const env = loadEnv(process.env);
 */
export function loadEnv(source: NodeJS.ProcessEnv): ServerEnv {
  const result = envSchema.safeParse(source);
  const problems = result.success
    ? []
    : result.error.issues.map((issue) => {
        const name = String(issue.path[0] ?? "environment");
        const value = source[name];
        const shown = value === undefined || name === "GADGET_SECRET" ? "" : ` (got "${value}")`;
        return `${name}: ${issue.message}${shown}`;
      });
  if (source.NODE_ENV === "production" && !source.GADGET_SECRET) {
    problems.push(
      "GADGET_SECRET: is required when NODE_ENV=production (it encrypts provider API keys at rest)",
    );
  }
  if (!result.success || problems.length > 0) throw new EnvError(problems);
  const env = result.data;
  const dataDir = env.GADGET_DATA_DIR ?? path.join(findRepoRoot(), ".gadget");
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
    redisPrefix: env.GADGET_REDIS_PREFIX,
    logLevel: env.LOG_LEVEL,
    droneGraceMs: env.DRONE_GRACE_MS,
  };
}

function parseTrustProxy(value: string | undefined): boolean | string[] {
  if (value === undefined || value === "false") return false;
  if (value === "true") return true;
  return value.split(",");
}
