// `gadget-drone service install|uninstall|status [--print]`: the drone as the user's service, a
// systemd user unit (Linux) or a launchd agent (macOS), running `gadget-drone start`.
import { execFile } from "node:child_process";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { UserError } from "@gadget/protocol";
import { readConfig } from "../config.ts";
import { launchAgentsDirectory, servicePath, systemdUserDirectory, userName } from "../env.ts";
import {
  launchdLabel,
  launchdPlist,
  type ServiceSpec,
  systemdUnit,
  systemdUnitName,
} from "../service/service-files.ts";

export type ServiceAction = "install" | "uninstall" | "status";

export interface ServiceOptions {
  config: string;
  /** Write the unit or plist to stdout; install nothing. */
  print: boolean;
  /** Also update itself between turns (`start --auto-update`). */
  autoUpdate: boolean;
  /** "linux" or "darwin"; default this machine's. */
  platform: string;
  /** The node binary and the gadget-drone command that runs now. */
  node: string;
  command: string;
}

interface Outcome {
  code: number;
  output: string;
}

function run(file: string, args: string[]): Promise<Outcome> {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: 30_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === "number" ? error.code : 127) : 0;
      resolve({ code, output: `${stdout}${stderr}`.trim() });
    });
  });
}

/**
 * The command a service should run: the stable link (…/bin/gadget-drone), not one version's file,
 * so an update switches what the service runs.
 */
export function stableCommand(command: string): string {
  const marker = `${path.sep}lib${path.sep}gadget-drone${path.sep}versions${path.sep}`;
  const at = command.indexOf(marker);
  return at < 0 ? command : path.join(command.slice(0, at), "bin", "gadget-drone");
}

async function specOf(options: ServiceOptions): Promise<ServiceSpec> {
  // Only a registered drone can run: refuse before writing a service that would fail forever.
  const config = await readConfig(options.config);
  return {
    node: options.node,
    command: stableCommand(options.command),
    args: ["start", ...(options.autoUpdate ? ["--auto-update"] : []), "--config", options.config],
    path: servicePath(),
    server: config.server,
    logFile: path.join(path.dirname(options.config), "service.log"),
  };
}

function servicePlace(platform: string): { file: string; kind: "systemd" | "launchd" } {
  if (platform === "linux") {
    return { file: path.join(systemdUserDirectory(), systemdUnitName), kind: "systemd" };
  }
  if (platform === "darwin") {
    return { file: path.join(launchAgentsDirectory(), `${launchdLabel}.plist`), kind: "launchd" };
  }
  throw new UserError(
    "validation_failed",
    `gadget-drone service knows systemd (Linux) and launchd (macOS), not ${platform}; run gadget-drone start under your own supervisor`,
  );
}

/** Runs the action; resolves with the lines to print (or an exit code after printing them). */
export async function service(action: ServiceAction, options: ServiceOptions): Promise<Outcome> {
  const place = servicePlace(options.platform);
  const uid = process.getuid?.() ?? 0;
  const target = `gui/${uid}/${launchdLabel}`;
  if (action === "install") {
    const spec = await specOf(options);
    const text = place.kind === "systemd" ? systemdUnit(spec) : launchdPlist(spec);
    if (options.print) return { code: 0, output: text.trimEnd() };
    await mkdir(path.dirname(place.file), { recursive: true });
    await writeFile(place.file, text);
    const steps =
      place.kind === "systemd"
        ? [
            ["systemctl", "--user", "daemon-reload"],
            ["systemctl", "--user", "enable", "--now", systemdUnitName],
          ]
        : [["launchctl", "bootstrap", `gui/${uid}`, place.file]];
    for (const [file, ...args] of steps) {
      const outcome = await run(file!, args);
      if (outcome.code !== 0) {
        return {
          code: 1,
          output: `Wrote ${place.file}, but \`${[file, ...args].join(" ")}\` failed: ${outcome.output || `exit ${outcome.code}`}\n${
            place.kind === "systemd"
              ? "This needs a systemd user session (systemd as the init system, you logged in); without one, run gadget-drone start under your own supervisor."
              : "Log in to the Mac's desktop session and run it again."
          }`,
        };
      }
    }
    return {
      code: 0,
      output:
        place.kind === "systemd"
          ? `Installed and started ${systemdUnitName} (${place.file}).\nLogs: journalctl --user -u ${systemdUnitName} -f\nTo keep it running while you are logged out and after a reboot: loginctl enable-linger ${userName()}`
          : `Installed and started ${launchdLabel} (${place.file}); it starts at every login.\nLogs: ${spec.logFile}`,
    };
  }
  if (action === "uninstall") {
    const installed = await readFile(place.file, "utf8").catch(() => null);
    if (installed === null) return { code: 0, output: `No service installed (${place.file}).` };
    if (place.kind === "systemd") {
      await run("systemctl", ["--user", "disable", "--now", systemdUnitName]);
      await rm(place.file, { force: true });
      await run("systemctl", ["--user", "daemon-reload"]);
    } else {
      await run("launchctl", ["bootout", target]);
      await rm(place.file, { force: true });
    }
    return { code: 0, output: `Stopped the drone's service and removed ${place.file}.` };
  }
  const installed = await readFile(place.file, "utf8").catch(() => null);
  if (installed === null) {
    return {
      code: 3,
      output: `Not installed as a service (no ${place.file}); gadget-drone service install does it.`,
    };
  }
  if (options.print) return { code: 0, output: installed.trimEnd() };
  const outcome =
    place.kind === "systemd"
      ? await run("systemctl", ["--user", "status", "--no-pager", systemdUnitName])
      : await run("launchctl", ["print", target]);
  return {
    code: outcome.code === 0 ? 0 : 3,
    output: `Installed: ${place.file}\n${outcome.output || `(${place.kind} says nothing: exit ${outcome.code})`}`,
  };
}
