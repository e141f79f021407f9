// `pnpm start`: the whole product on this machine. Takes its settings from env.ts (PORT, HOST,
// MONGO_URL, REDIS_URL, GADGET_DATA_DIR), prints the URL and the login, and stops everything on Ctrl-C.
import path from "node:path";
import { findRepoRoot } from "@gadget/services";
import { type LauncherEnv, loadEnv } from "./env.ts";
import { childFailure, displayPath, launch, type Running } from "./launcher.ts";
import { firstRunHint } from "./local-account.ts";

const rootDir = findRepoRoot();
const say = (line: string) => console.log(line);

let env: LauncherEnv;
try {
  env = loadEnv(rootDir);
} catch (error) {
  console.error((error as Error).message);
  process.exit(2);
}
const { dataDir, host, port } = env;

let running: Running | null = null;
let stopping = false;

async function shutdown(code: number): Promise<never> {
  stopping = true;
  await running?.stop();
  process.exit(code);
}

// Ctrl-C once: stop in order (a running turn gets 5 s to finish, then ends as `drone_shutdown`,
// resumable); twice: now.
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.on(signal, () => {
    if (stopping) {
      say("stopping now");
      running?.kill();
      process.exit(130);
    }
    say("\nstopping the drone, the server and the services…");
    void shutdown(0).then(() => undefined);
  });
}

try {
  running = await launch({
    rootDir,
    dataDir,
    host,
    port,
    mongoUrl: env.mongoUrl,
    redisUrl: env.redisUrl,
    env: env.inherited,
    say,
  });
} catch (error) {
  if (!stopping) {
    console.error(`pnpm start: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  }
}

if (running && !stopping) {
  const { url, session, droneName } = running;
  say("");
  say(`Gadget Code is running at ${url}/`);
  say(
    `  log in as ${session.user.email} with password ${session.user.password}` +
      ` (kept in ${displayPath(path.join(dataDir, "local-user.json"))})`,
  );
  say(
    `  drone "${droneName}" is online; its workspaces are in ${displayPath(path.join(dataDir, "workspace"))}`,
  );
  say(`  logs: ${displayPath(path.join(dataDir, "logs"))}/{server,drone}.log`);
  // The hint only while something is missing; a server that cannot say is not worth a warning.
  const hint = await firstRunHint(url, session.token).catch(() => null);
  if (hint) say(`  ${hint}`);
  say("Press Ctrl-C to stop.");

  const failure = await running.failed;
  if (!stopping) {
    console.error(childFailure(failure.child, "stopped unexpectedly", failure));
    console.error("stopping the rest…");
    await shutdown(1);
  }
}
