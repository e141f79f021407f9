// @gadget/server: the gadget-code server as a library (the CLI is src/cli.ts).
export { resolveConfig, type ServerConfig } from "./config.ts";
export { EnvError, loadEnv, type ServerEnv } from "./env.ts";
export { createGadgetServer, type GadgetServer } from "./server.ts";
