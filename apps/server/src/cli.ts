// The `gadget-code` command line: `serve` (the server) and the admin tasks on users.
import { parseArgs } from "node:util";
import { openDatabase } from "@gadget/db";
import { GadgetError } from "@gadget/protocol";
import { disconnectSignIns } from "./admin/disconnect.ts";
import { createInvite } from "./admin/invites.ts";
import { createUser, generatePassword, resetPassword } from "./admin/users.ts";
import { EnvError, loadProcessEnv, type ServerEnv } from "./env.ts";
import { resolveServices, serve } from "./main.ts";

const usage = `Usage: gadget-code <command>

Commands:
  serve                                  run the gadget-code server (HTTP + Socket.IO)
  user create --email <e> [--name <n>] [--password-stdin]
                                         create a user; prints a generated password unless
                                         one is read from stdin
  user reset-password --email <e> [--password-stdin]
                                         set a new password (generated unless read from stdin)
                                         and log the user out everywhere
  invite create [--days <n>]             make a one-time signup link (GADGET_SIGNUP=invite),
                                         good for n days (default 7)
  help                                   show this help

Environment: PORT (3000), HOST (127.0.0.1), PUBLIC_URL, MONGO_URL, REDIS_URL,
GADGET_SECRET (required when NODE_ENV=production), LOG_LEVEL (info), DRONE_GRACE_MS (60000),
GADGET_DATA_DIR (.gadget), GADGET_REDIS_PREFIX (gadget), GADGET_WEB_DIR (apps/web/dist),
GADGET_SIGNUP (open; closed in production), GADGET_TOKEN_TTL_DAYS (30),
GADGET_ALLOW_PRIVATE_NETWORK (false), GADGET_TRUST_PROXY (false), GADGET_DRONE_PACKAGE (built
from this checkout into GADGET_DATA_DIR/drone-package).
When MONGO_URL or REDIS_URL is unset, the services \`pnpm start\` or \`pnpm services:up\` run are
used, or private ones are started with data under GADGET_DATA_DIR.`;

/** The first line of stdin, for passwords that must not appear in `ps` or shell history. */
async function readStdinLine(): Promise<string> {
  let text = "";
  for await (const chunk of process.stdin) {
    text += chunk;
    if (text.includes("\n")) break;
  }
  return text.split("\n")[0]?.replace(/\r$/, "") ?? "";
}

/** Runs `task` with the database the server would use, then closes it (and any services started). */
async function withDatabase<T>(
  env: ServerEnv,
  task: (database: Awaited<ReturnType<typeof openDatabase>>, redisUrl: string) => Promise<T>,
): Promise<T> {
  const services = await resolveServices(env, (line) => console.error(line));
  const database = await openDatabase(services.mongoUrl);
  try {
    return await task(database, services.redisUrl);
  } finally {
    await database.close();
    await services.stop();
  }
}

async function user(env: ServerEnv, args: string[]): Promise<number> {
  const [action, ...rest] = args;
  const { values } = parseArgs({
    args: rest,
    options: {
      email: { type: "string" },
      name: { type: "string" },
      "password-stdin": { type: "boolean", default: false },
    },
    strict: true,
  });
  if (action !== "create" && action !== "reset-password") {
    console.error(`Unknown user command "${action ?? ""}".\n\n${usage}`);
    return 1;
  }
  if (!values.email) {
    console.error(`gadget-code user ${action}: --email is required`);
    return 1;
  }
  const generated = !values["password-stdin"];
  const password = generated ? generatePassword() : await readStdinLine();
  const email = values.email;
  return withDatabase(env, async ({ models }, redisUrl) => {
    if (action === "create") {
      const created = await createUser(models, { email, password, name: values.name });
      console.log(`Created user ${created.email} (${created.id}).`);
    } else {
      const reset = await resetPassword(models, email, password);
      // Their open browser tabs are signed out now, not at the servers' next sweep.
      await disconnectSignIns(redisUrl, env.redisPrefix, reset.tokenHashes).catch(() =>
        console.error("Could not reach Redis: open connections close within a minute."),
      );
      console.log(
        `Password of ${email.toLowerCase()} changed; ${reset.tokensRevoked} session(s) logged out.`,
      );
    }
    if (generated) console.log(`Password: ${password}`);
    return 0;
  });
}

async function invite(env: ServerEnv, args: string[]): Promise<number> {
  const [action, ...rest] = args;
  const { values } = parseArgs({
    args: rest,
    options: { days: { type: "string", default: "7" } },
    strict: true,
  });
  const days = Number(values.days);
  if (action !== "create" || !Number.isInteger(days) || days < 1 || days > 365) {
    console.error(`Usage: gadget-code invite create [--days <1-365>]\n\n${usage}`);
    return 1;
  }
  return withDatabase(env, async ({ models }) => {
    const { code, expiresAt } = await createInvite(models, days);
    const base = env.publicUrl ?? `http://${env.host}:${env.port}`;
    console.log(`Invite link (one signup, until ${expiresAt.toISOString()}):`);
    console.log(`${base.replace(/\/+$/, "")}/signup?invite=${code}`);
    if (env.signup !== "invite") {
      console.error(
        `Note: GADGET_SIGNUP is "${env.signup}"; invites are used only when it is "invite".`,
      );
    }
    return 0;
  });
}

async function run(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === "help" || command === "--help" || command === "-h") {
    console.log(usage);
    return command ? 0 : 1;
  }
  if (command !== "serve" && command !== "user" && command !== "invite") {
    console.error(`Unknown command "${command}".\n\n${usage}`);
    return 1;
  }
  let env: ServerEnv;
  try {
    env = loadProcessEnv();
  } catch (error) {
    if (error instanceof EnvError) {
      console.error(error.message);
      return 2;
    }
    throw error;
  }
  if (command === "user") return user(env, rest);
  if (command === "invite") return invite(env, rest);
  await serve(env);
  return -1;
}

run(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (error: unknown) => {
    const message =
      error instanceof GadgetError || error instanceof Error ? error.message : String(error);
    console.error(`gadget-code: ${message}`);
    process.exit(1);
  },
);
