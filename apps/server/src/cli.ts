// The `gadget-code` command line: `serve` (the server), `help`.
import { EnvError, loadEnv } from "./env.ts";
import { serve } from "./main.ts";

const usage = `Usage: gadget-code <command>

Commands:
  serve     run the gadget-code server (HTTP + Socket.IO)
  help      show this help

Environment (serve): PORT (3000), HOST (127.0.0.1), PUBLIC_URL, MONGO_URL, REDIS_URL,
GADGET_SECRET (required when NODE_ENV=production), LOG_LEVEL (info), DRONE_GRACE_MS (60000),
GADGET_DATA_DIR (.gadget), GADGET_REDIS_PREFIX (gadget).
When MONGO_URL or REDIS_URL is unset, private servers are started with data under GADGET_DATA_DIR.`;

async function run(argv: string[]): Promise<number> {
  const [command] = argv;
  if (!command || command === "help" || command === "--help" || command === "-h") {
    console.log(usage);
    return command ? 0 : 1;
  }
  if (command === "serve") {
    try {
      await serve(loadEnv(process.env));
    } catch (error) {
      if (error instanceof EnvError) {
        console.error(error.message);
        return 2;
      }
      throw error;
    }
    return -1;
  }
  console.error(`Unknown command "${command}".\n\n${usage}`);
  return 1;
}

run(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  },
);
