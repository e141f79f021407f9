// `gadget-drone unregister`: tell the server, then forget the credential.
import { rm } from "node:fs/promises";
import { readConfig } from "../config.ts";
import { unregisterDrone } from "../server-api.ts";

/** Unregisters; returns the line to print. The local config is removed even when the server cannot be told. */
export async function unregister(configFile: string): Promise<string> {
  const config = await readConfig(configFile);
  let told = "the server revoked its credential";
  try {
    await unregisterDrone(config.server, config.droneId, config.credential);
  } catch (error) {
    told = `the server could not be told (${(error as Error).message}); revoke it in the web IDE`;
  }
  await rm(configFile, { force: true });
  return `Unregistered drone "${config.name}": removed ${configFile}; ${told}.`;
}
