// `gadget-drone register`: exchange a registration token for a credential and write the config.
import { hostname, platform } from "node:os";
import path from "node:path";
import { UserError } from "@gadget/protocol";
import { readConfigIfPresent, writeConfig } from "../config.ts";
import { registerDrone, serverUrl } from "../server-api.ts";

export interface RegisterOptions {
  server: string;
  token: string;
  name?: string;
  workspace: string;
  capacity: number;
  config: string;
  force: boolean;
  version: string;
  /** `--label key=value` / `--label key`, repeated. */
  label?: string[];
}

/** Registers this machine; returns the line to print. */
export async function register(options: RegisterOptions): Promise<string> {
  const server = serverUrl(options.server);
  const existing = await readConfigIfPresent(options.config).catch(() => null);
  if (existing && existing.server !== server && !options.force) {
    throw new UserError(
      "config_exists",
      `${options.config} already registers this machine with ${existing.server}; pass --force to replace it, or --config <file> to keep both`,
    );
  }
  const name = options.name ?? hostname();
  const { drone, credential } = await registerDrone(server, {
    token: options.token,
    name,
    hostname: hostname(),
    platform: `${platform()}-${process.arch}`,
    version: options.version,
    capacity: options.capacity,
    ...(options.label?.length ? { labels: options.label } : {}),
  });
  await writeConfig(options.config, {
    server,
    droneId: drone._id,
    credential,
    name: drone.name,
    workspace: path.resolve(options.workspace),
    capacity: options.capacity,
    registeredAt: new Date().toISOString(),
    labels: options.label ?? [],
  });
  return `Registered drone "${drone.name}" with ${server}. Config: ${options.config}. Start it with: gadget-drone start${
    options.config ? ` --config ${options.config}` : ""
  }`;
}
