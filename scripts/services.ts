// `pnpm services:up | services:down | services:build`: private Redis and MongoDB for development,
// and the builds of FerretDB and of the tests' Gitea (CI runs `services:build` once, before the tests).
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import {
  ensureFerretdb,
  ensureGitea,
  findRepoRoot,
  pingMongo,
  pingRedis,
  startServices,
  stopPids,
} from "@gadget/services";

interface State {
  mongoUrl: string;
  redisUrl: string;
  pids: number[];
}

const rootDir = findRepoRoot();
const dataDir = path.join(rootDir, ".gadget", "services");
const stateFile = path.join(dataDir, "state.json");
const log = (line: string) => console.error(line);

function readState(): State | null {
  if (!existsSync(stateFile)) return null;
  try {
    return JSON.parse(readFileSync(stateFile, "utf8")) as State;
  } catch {
    return null;
  }
}

async function answers(state: State): Promise<boolean> {
  try {
    await Promise.all([pingMongo(state.mongoUrl), pingRedis(state.redisUrl)]);
    return true;
  } catch {
    return false;
  }
}

async function up(): Promise<void> {
  const previous = readState();
  if (previous && (await answers(previous))) {
    log("services already running");
    printUrls(previous);
    return;
  }
  if (previous) await stopPids(previous.pids);
  const services = await startServices({
    rootDir,
    dataDir,
    mongoUrl: process.env.MONGO_URL,
    redisUrl: process.env.REDIS_URL,
    persistent: true,
    detached: true,
    log,
  });
  const state: State = {
    mongoUrl: services.mongoUrl,
    redisUrl: services.redisUrl,
    pids: services.pids,
  };
  writeFileSync(stateFile, `${JSON.stringify(state, null, 2)}\n`);
  log(
    `started ${services.mongoKind} and ${services.redisKind}; data in ${path.relative(rootDir, dataDir)}/`,
  );
  printUrls(state);
}

function printUrls(state: State): void {
  console.log(`MONGO_URL=${state.mongoUrl}`);
  console.log(`REDIS_URL=${state.redisUrl}`);
}

async function down(): Promise<void> {
  const state = readState();
  if (!state) {
    log("no services running");
    return;
  }
  await stopPids(state.pids);
  rmSync(stateFile, { force: true });
  log(`stopped ${state.pids.length} process(es)`);
}

// One after the other: each Go build already keeps both cores busy.
async function build(): Promise<void> {
  const binary = await ensureFerretdb(rootDir, log);
  if (!binary) {
    log("Go is not installed: FerretDB and Gitea not built");
    return;
  }
  log(`FerretDB ready: ${binary}`);
  const gitea = await ensureGitea(rootDir, log);
  log(`Gitea ready: ${gitea?.binary}`);
}

const commands: Record<string, () => Promise<void>> = { up, down, build };
const command = commands[process.argv[2] ?? ""];
if (!command) {
  console.error("usage: services (up | down | build)");
  process.exit(2);
}
command().catch((error: unknown) => {
  console.error(`services: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
