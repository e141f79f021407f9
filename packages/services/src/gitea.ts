// A private Gitea on a free loopback port, for tests that need a real forge: its own data in a
// temporary folder (removed at stop), an admin with an API token, SQLite, no SSH, no mail.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { existsSync, openSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir, userInfo } from "node:os";
import path from "node:path";
import { builtGitea, type GiteaBuild } from "./gitea-build.ts";
import { GiteaClient, type GiteaUser } from "./gitea-client.ts";
import { startReaper } from "./reaper.ts";
import { findRepoRoot } from "./repo-root.ts";
import { freePort, waitUntil } from "./wire.ts";

export interface GiteaOptions {
  /** Repository root, where tools/gitea/build.json is; default: found from this file. */
  rootDir?: string;
  /** The admin's user name; default `gadget-admin`. */
  adminName?: string;
  /** How long to wait for Gitea to answer; default 60 s. */
  startTimeoutMs?: number;
}

export interface RunningGitea extends GiteaClient {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /** Gitea's REST API, `${url}/api/v1` (the forge's API URL a project names). */
  apiUrl: string;
  /** The site administrator, with a token of every scope. */
  admin: GiteaUser;
  /** The process group leader (Gitea runs git in its group). */
  pid: number;
  /** Its settings, database and repositories: a temporary folder removed at stop. */
  dataDir: string;
  /** Stops Gitea and its git processes, then removes its data. */
  stop(): Promise<void>;
}

/**
 * Starts a private Gitea built by `pnpm services:build` (throws, saying so, when it is not built).
 * @example const gitea = await startGitea(); const repository = await gitea.createRepository("app");
 */
export async function startGitea(options: GiteaOptions = {}): Promise<RunningGitea> {
  const build = builtGitea(options.rootDir ?? findRepoRoot());
  if (!build) {
    throw new Error(
      "Gitea is not built: run `pnpm services:build` once (about 15 minutes on two cores; Go and a C compiler are needed)",
    );
  }
  const dataDir = await mkdtemp(path.join(tmpdir(), "gadget-gitea-"));
  let child: ChildProcess | undefined;
  try {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const configFile = writeConfig(dataDir, build, port);
    const logFile = path.join(dataDir, "gitea.log");
    child = spawnGitea(build, ["web", "--config", configFile], dataDir, logFile);
    startReaper([child.pid!]);
    const exited = once(child, "exit").then(([code]) => {
      throw new Error(`Gitea exited with code ${code} while starting:\n${tail(logFile)}`);
    });
    exited.catch(() => {});
    const up = waitUntil(
      `Gitea at ${url}`,
      async () => {
        const response = await fetch(`${url}/api/v1/version`);
        if (!response.ok) throw new Error(`answered ${response.status}`);
      },
      options.startTimeoutMs ?? 60_000,
    );
    await Promise.race([up, exited]);
    const admin = await createAdmin(build, configFile, dataDir, url, options.adminName);
    const running = child;
    const client = new GiteaClient(url, admin);
    return Object.assign(client, {
      url,
      apiUrl: `${url}/api/v1`,
      admin,
      pid: running.pid!,
      dataDir,
      stop: async () => {
        await stopGroup(running);
        await rm(dataDir, { recursive: true, force: true });
      },
    });
  } catch (error) {
    if (child) await stopGroup(child);
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
}

/** Gitea's settings for a throwaway forge on loopback; returns the file's path. */
function writeConfig(dataDir: string, build: GiteaBuild, port: number): string {
  const secret = () => randomBytes(32).toString("base64url");
  const data = path.join(dataDir, "data");
  const config = `
APP_NAME = Gadget test forge
RUN_MODE = prod
RUN_USER = ${userInfo().username}
WORK_PATH = ${dataDir}

[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = ${port}
DOMAIN = 127.0.0.1
ROOT_URL = http://127.0.0.1:${port}/
; Without it Gitea cannot find its translations and pages: the binary embeds none of them.
STATIC_ROOT_PATH = ${build.staticRoot}
APP_DATA_PATH = ${data}
DISABLE_SSH = true
START_SSH_SERVER = false
OFFLINE_MODE = true
LFS_START_SERVER = false

[database]
DB_TYPE = sqlite3
PATH = ${path.join(data, "gitea.db")}
SQLITE_JOURNAL_MODE = WAL

[repository]
ROOT = ${path.join(dataDir, "repositories")}
DEFAULT_BRANCH = main

[security]
INSTALL_LOCK = true
SECRET_KEY = ${secret()}
INTERNAL_TOKEN = ${secret()}

[oauth2]
JWT_SECRET = ${secret()}

[service]
DISABLE_REGISTRATION = true
DEFAULT_KEEP_EMAIL_PRIVATE = true
NO_REPLY_ADDRESS = noreply.invalid

[mailer]
ENABLED = false

[actions]
ENABLED = false

[webhook]
; Its default refuses every address but external ones, and the tests' servers are on loopback.
ALLOWED_HOST_LIST = loopback

[session]
PROVIDER = memory

[cache]
ADAPTER = memory

[indexer]
ISSUE_INDEXER_TYPE = db

[log]
MODE = console
LEVEL = Warn
`;
  const file = path.join(dataDir, "app.ini");
  writeFileSync(file, config.trimStart(), { mode: 0o600 });
  return file;
}

function spawnGitea(
  build: GiteaBuild,
  args: string[],
  dataDir: string,
  logFile: string,
): ChildProcess {
  const output = openSync(logFile, "a");
  const child = spawn(build.binary, [...args, "--work-path", dataDir], {
    cwd: dataDir,
    // Its own process group, so stopping it stops the git processes it started too.
    detached: true,
    stdio: ["ignore", output, output],
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: dataDir,
      // What Gitea and git put in a temp folder is removed with the rest.
      TMPDIR: dataDir,
      GITEA_WORK_DIR: dataDir,
      // CI runs as root; Gitea refuses root unless told this.
      GITEA_I_AM_BEING_UNSAFE_RUNNING_AS_ROOT: "true",
    },
  });
  child.on("error", () => {
    // Reported by the readiness wait or the exit code.
  });
  return child;
}

/** Creates the admin with Gitea's command line (no API can make the first one), then its token. */
async function createAdmin(
  build: GiteaBuild,
  configFile: string,
  dataDir: string,
  url: string,
  name = "gadget-admin",
): Promise<GiteaUser> {
  const password = randomBytes(18).toString("base64url");
  const email = `${name}@example.com`;
  const logFile = path.join(dataDir, "admin.log");
  const child = spawnGitea(
    build,
    [
      "admin",
      "user",
      "create",
      "--config",
      configFile,
      "--username",
      name,
      "--password",
      password,
      "--email",
      email,
      "--admin",
      "--must-change-password=false",
    ],
    dataDir,
    logFile,
  );
  const [code] = await once(child, "exit");
  if (code !== 0) throw new Error(`gitea admin user create failed (${code}):\n${tail(logFile)}`);
  const token = await GiteaClient.createToken(url, name, password);
  return { name, password, email, token };
}

/** SIGTERM to the group, SIGKILL after 5 s; resolves when the leader has exited. */
async function stopGroup(child: ChildProcess): Promise<void> {
  const pid = child.pid;
  if (pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const signal = (name: NodeJS.Signals) => {
    try {
      process.kill(-pid, name);
    } catch {
      // Already gone.
    }
  };
  const exited = once(child, "exit");
  signal("SIGTERM");
  const timer = setTimeout(() => signal("SIGKILL"), 5000);
  await exited;
  clearTimeout(timer);
  // Whatever of the group outlived the leader (a git process mid-request).
  signal("SIGKILL");
}

/** The last lines of a log, for an error message. */
function tail(file: string): string {
  if (!existsSync(file)) return "(no log)";
  return readFileSync(file, "utf8").trim().split("\n").slice(-20).join("\n");
}
