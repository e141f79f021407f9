// The real sandbox of this machine for tests that build a Drone in-process (CI has bubblewrap).
import path from "node:path";
import type { DroneConfig } from "../config.ts";
import { openSandbox } from "../sandbox.ts";

/** `sandbox` and `hiddenPaths` of DroneSettings, as `gadget-drone start` would find them. */
export async function droneSandbox(config: DroneConfig) {
  const found = await openSandbox(config, path.join(config.workspace, ".config", "config.json"), {
    noSandbox: false,
  });
  return { sandbox: found.sandbox, hiddenPaths: found.hidden };
}
