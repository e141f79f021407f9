// The variables the server and `pnpm start` both read — where data is kept, where the server
// listens, which databases it uses — with one schema and one set of defaults, so the launcher
// and the server it starts can never read one of them differently.
import path from "node:path";
import { z } from "zod";
import { parseRedisUrl, redisUrlForms } from "./redis-url.ts";

/** Defaults of the shared variables. */
export const sharedDefaults = {
  port: 3000,
  host: "127.0.0.1",
  /** Under the repository: `<root>/.gadget`. */
  dataDir: (rootDir: string): string => path.join(rootDir, ".gadget"),
} as const;

export const portSchema = z.coerce
  .number({ error: "must be a port number (0-65535)" })
  .int("must be a whole number")
  .min(0, "must be a port number (0-65535)")
  .max(65535, "must be a port number (0-65535)");

/** An empty value (`MONGO_URL=` in a .env file) means "not set", not "invalid". */
const unsetWhenEmpty = (value: unknown) => (value === "" ? undefined : value);

export const sharedEnvironmentSchema = z.object({
  GADGET_DATA_DIR: z.preprocess(unsetWhenEmpty, z.string().min(1).optional()),
  HOST: z.string().min(1).default(sharedDefaults.host),
  PORT: portSchema.default(sharedDefaults.port),
  MONGO_URL: z.preprocess(
    unsetWhenEmpty,
    z
      .string()
      .regex(/^mongodb(\+srv)?:\/\//, "must start with mongodb://")
      .optional(),
  ),
  REDIS_URL: z.preprocess(
    unsetWhenEmpty,
    // One Redis, a Redis Cluster or a Sentinel-watched master (redis-url.ts).
    z.string().refine(isRedisUrl, { error: redisUrlForms }).optional(),
  ),
});

/**
 * One line per offending variable, `NAME: what is wrong (got "value")`; values of variables in
 * `secret` are not shown.
 */
export function environmentProblems(
  error: z.ZodError,
  source: NodeJS.ProcessEnv,
  secret: readonly string[] = [],
): string[] {
  return error.issues.map((issue) => {
    const name = String(issue.path[0] ?? "environment");
    const value = source[name];
    const shown = value === undefined || secret.includes(name) ? "" : ` (got "${value}")`;
    return `${name}: ${issue.message}${shown}`;
  });
}

function isRedisUrl(value: string): boolean {
  try {
    parseRedisUrl(value);
    return true;
  } catch {
    return false;
  }
}
