// `gadget-drone status`: the config, whether the server answers, and the turns running now.
import { readFile } from "node:fs/promises";
import path from "node:path";
import { readConfig } from "../config.ts";
import { automaticLabels } from "../labels.ts";
import { isSameProcess } from "../process-identity.ts";
import { describeSandbox, openSandbox } from "../sandbox.ts";
import { checkServer, droneRecord } from "../server-api.ts";

/** The file a running drone keeps up to date, for `status`. */
export function runtimeFile(configFile: string): string {
  return path.join(path.dirname(configFile), "runtime.json");
}

export interface RuntimeStatus {
  pid: number;
  /** Which life of `pid` wrote it: a PID left by a drone that died may be another process's now. */
  identity?: string;
  connected: boolean;
  /** The sandbox line the running drone printed at start. */
  sandbox?: string;
  activeTurns: Array<{ turnId: string; project: string; pass: number; phase: string }>;
  updatedAt: string;
}

/** What `start` would confine commands with, or why it would refuse. */
async function detectedSandbox(config: Awaited<ReturnType<typeof readConfig>>, configFile: string) {
  try {
    const found = await openSandbox(config, configFile, { noSandbox: false, willRun: false });
    return describeSandbox(found.sandbox.info, found.processLimit);
  } catch (error) {
    return `none available — ${(error as Error).message}`;
  }
}

/** Builds the status report as lines. */
export async function status(configFile: string): Promise<string[]> {
  const config = await readConfig(configFile);
  const lines = [
    `drone:      ${config.name} (${config.droneId})`,
    `config:     ${configFile}`,
    `server:     ${config.server}`,
    `workspaces: ${config.workspace}`,
    `capacity:   ${config.capacity}`,
  ];
  const health = await checkServer(config.server);
  lines.push(`reachable:  ${health.ok ? "yes" : "no"} (${health.detail})`);
  // The server's labels (the user may have edited them), else the ones this machine registered.
  const record = health.ok
    ? await droneRecord(config.server, config.droneId, config.credential)
    : null;
  const own = automaticLabels({
    platform: process.platform,
    arch: process.arch,
    sandboxKind: "",
  }).filter((label) => !label.startsWith("sandbox="));
  const labels = record?.labels.length ? record.labels : [...(config.labels ?? []), ...own];
  lines.push(`labels:     ${labels.join(" ") || "none"}`);
  if (record?.outdated) {
    lines.push("version:    older than the server's: gadget-drone update installs the server's");
  }
  const runtime = await readFile(runtimeFile(configFile), "utf8")
    .then((text) => JSON.parse(text) as RuntimeStatus)
    .catch(() => null);
  if (!runtime || !(await isSameProcess(runtime.pid, runtime.identity))) {
    lines.push(`sandbox:    ${await detectedSandbox(config, configFile)}`);
    lines.push("running:    no (start it with `gadget-drone start`)");
    return lines;
  }
  if (runtime.sandbox) lines.push(`sandbox:    ${runtime.sandbox}`);
  lines.push(
    `running:    yes, pid ${runtime.pid}, ${runtime.connected ? "connected" : "not connected"}`,
  );
  if (runtime.activeTurns.length === 0) lines.push("turns:      none");
  for (const turn of runtime.activeTurns) {
    lines.push(
      `turn:       ${turn.turnId} [${turn.project}] ${turn.pass > 0 ? `pass ${turn.pass}` : turn.phase}`,
    );
  }
  return lines;
}
