// The launcher's one reader of the environment: where `pnpm start` keeps its data, where the
// server listens, databases of the user's own, and the environment the server and drone inherit.
import path from "node:path";
import { environmentProblems, sharedDefaults, sharedEnvironmentSchema } from "@gadget/services";

export interface LauncherEnv {
  /** GADGET_DATA_DIR; default `<repository>/.gadget`. */
  dataDir: string;
  /** HOST; default 127.0.0.1 (the server's). */
  host: string;
  /** PORT; default 3000 (the server's). */
  port: number;
  /** MONGO_URL, REDIS_URL: databases of the user's own; default: private ones under `dataDir`. */
  mongoUrl: string | undefined;
  redisUrl: string | undefined;
  /** The whole environment, which the server and the drone inherit. */
  inherited: NodeJS.ProcessEnv;
}

/**
 * Reads the launcher's settings; throws an Error whose message says what is wrong.
 * @example const env = loadEnv(findRepoRoot());
 */
export function loadEnv(rootDir: string, source: NodeJS.ProcessEnv = process.env): LauncherEnv {
  // The server's own schema of these variables, so `pnpm start` reads PORT or MONGO_URL exactly
  // as the server it starts will.
  const result = sharedEnvironmentSchema.safeParse(source);
  if (!result.success) throw new Error(environmentProblems(result.error, source).join("\n"));
  const env = result.data;
  return {
    dataDir: path.resolve(env.GADGET_DATA_DIR ?? sharedDefaults.dataDir(rootDir)),
    host: env.HOST,
    port: env.PORT,
    mongoUrl: env.MONGO_URL,
    redisUrl: env.REDIS_URL,
    inherited: source,
  };
}
