// The drone as a service: the systemd unit (checked by systemd-analyze where it is installed), the
// launchd plist as text, and `gadget-drone service` run as a user would run it.
import { execFile, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { makeTempDir } from "@gadget/testkit";
import { describe, expect, it } from "vitest";
import { writeConfig } from "../config.ts";
import { launchdPlist, type ServiceSpec, systemdUnit } from "./service-files.ts";

const bin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../bin/gadget-drone.js");
const systemdAnalyze = spawnSync("systemd-analyze", ["--version"]).status === 0;

async function spec(): Promise<ServiceSpec> {
  // A home with a space, and a server URL with a `%` systemd would otherwise expand.
  const home = path.join(await makeTempDir("service-"), "Ada Lovelace");
  const command = path.join(home, ".local/bin/gadget-drone");
  mkdirSync(path.dirname(command), { recursive: true });
  writeFileSync(command, "#!/bin/sh\n", { mode: 0o755 });
  return {
    node: process.execPath,
    command,
    args: [
      "start",
      "--auto-update",
      "--config",
      path.join(home, ".config/gadget-drone/config.json"),
    ],
    path: "/usr/local/bin:/usr/bin:/bin",
    server: "https://gadget.example.com/a%20b",
    logFile: path.join(home, ".config/gadget-drone/service.log"),
  };
}

function gadgetDrone(args: string[], env: Record<string, string>) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [bin, ...args],
      { env: { PATH: process.env.PATH ?? "", ...env }, timeout: 60_000 },
      (error, stdout, stderr) =>
        resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe("the service files", () => {
  it.runIf(systemdAnalyze)(
    "write a systemd user unit that systemd-analyze verifies without a word",
    async () => {
      const unit = systemdUnit(await spec());
      const directory = await makeTempDir("unit-");
      const file = path.join(directory, "gadget-drone.service");
      writeFileSync(file, unit);
      const verified = spawnSync("systemd-analyze", ["verify", file], { encoding: "utf8" });
      expect(`${verified.stdout}${verified.stderr}`).toBe("");
      expect(verified.status).toBe(0);
    },
  );

  it("run gadget-drone start with absolute paths, drain on one SIGTERM, restart only after a crash", async () => {
    const given = await spec();
    const unit = systemdUnit(given);
    expect(unit).toContain(
      `ExecStart=${process.execPath} "${given.command}" start --auto-update --config "${given.args[3]}"`,
    );
    expect(unit).toContain(
      "Description=gadget-drone: runs Gadget Code turns on this machine for https://gadget.example.com/a%%20b",
    );
    expect(unit).toMatch(/^Environment=PATH=\/usr\/local\/bin:\/usr\/bin:\/bin$/m);
    expect(unit).toMatch(/^Restart=on-failure$/m);
    expect(unit).toMatch(/^KillSignal=SIGTERM$/m);
    expect(unit).toMatch(/^WantedBy=default.target$/m);
  });

  it("write a launchd agent plist that starts at login and stays up after a crash only", async () => {
    const given = { ...(await spec()), path: "/opt/a&b/bin:/usr/bin" };
    const plist = launchdPlist(given);
    expect(plist).toContain("<key>Label</key>\n  <string>dev.gadget-code.drone</string>");
    const args = [...plist.matchAll(/<string>([^<]*)<\/string>/g)].map((match) => match[1]);
    expect(args.slice(1, 7)).toEqual([
      process.execPath,
      given.command,
      "start",
      "--auto-update",
      "--config",
      given.args[3],
    ]);
    expect(plist).toContain("<string>/opt/a&amp;b/bin:/usr/bin</string>");
    expect(plist).toContain("<key>RunAtLoad</key>\n  <true/>");
    expect(plist).toContain("<key>SuccessfulExit</key>\n    <false/>");
    // Every element opened is closed, in order.
    const stack: string[] = [];
    for (const [, closing, name, selfClosing] of plist.matchAll(/<(\/?)(\w+)[^>]*?(\/?)>/g)) {
      if (selfClosing) continue;
      if (closing) expect(stack.pop()).toBe(name);
      else stack.push(name!);
    }
    expect(stack).toEqual([]);
  });
});

describe("gadget-drone service", () => {
  it("prints the unit of a registered drone, refuses an unregistered one, and says what cannot run here", async () => {
    const home = await makeTempDir("service-home-");
    const env = { HOME: home, XDG_CONFIG_HOME: path.join(home, ".config") };
    const config = path.join(home, ".config/gadget-drone/config.json");
    const unregistered = await gadgetDrone(["service", "install", "--print"], env);
    expect(unregistered.code).toBe(1);
    expect(unregistered.stderr).toContain("No drone config");

    await writeConfig(config, {
      server: "http://127.0.0.1:3000",
      droneId: "0123456789abcdef01234567",
      credential: "gdc_x",
      name: "laptop",
      workspace: path.join(home, "workspaces"),
      capacity: 2,
      registeredAt: new Date().toISOString(),
    });
    const printed = await gadgetDrone(["service", "install", "--print"], env);
    expect(printed.code).toBe(0);
    expect(printed.stdout).toContain(`${bin} start --auto-update --config ${config}`);
    const plist = await gadgetDrone(["service", "install", "--print", "--platform", "darwin"], env);
    expect(plist.stdout).toContain("<string>dev.gadget-code.drone</string>");
    const unitFile = path.join(home, ".config/systemd/user/gadget-drone.service");
    expect(existsSync(unitFile)).toBe(false);

    // Here systemd is not the init system: the unit is written, and the failure says why.
    const installed = await gadgetDrone(["service", "install", "--no-auto-update"], env);
    if (installed.code === 0) {
      // A machine with a systemd user session: it runs; leave it as it was.
      await gadgetDrone(["service", "uninstall"], env);
      return;
    }
    expect(installed.stderr).toContain(`Wrote ${unitFile}, but \`systemctl --user`);
    expect(installed.stderr).toContain("needs a systemd user session");
    expect(readFileSync(unitFile, "utf8")).toContain(`start --config ${config}`);
    const status = await gadgetDrone(["service", "status", "--print"], env);
    expect(status.stdout).toContain("ExecStart=");
    const removed = await gadgetDrone(["service", "uninstall"], env);
    expect(removed.stdout).toContain(`removed ${unitFile}`);
    expect(existsSync(unitFile)).toBe(false);
    const after = await gadgetDrone(["service", "status"], env);
    expect(after.code).toBe(3);
    expect(after.stderr).toContain("Not installed as a service");
  }, 60_000);
});
