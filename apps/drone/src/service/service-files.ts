// The files that keep a drone running as the user's service: a systemd user unit on Linux, a
// launchd agent on macOS. Both run `gadget-drone start` and stop it with one SIGTERM (a drain).

/** What the service runs and where it writes. */
export interface ServiceSpec {
  /** The node binary, absolute (a service's PATH is not the shell's). */
  node: string;
  /** The gadget-drone command, absolute: the stable link, so an update switches what it runs. */
  command: string;
  /** Arguments after the command, e.g. ["start", "--config", "/home/ada/.config/gadget-drone/config.json"]. */
  args: string[];
  /** PATH for the drone: bwrap, git and the toolchains its turns use are found on it. */
  path: string;
  /** Shown in the description: the server it works for. */
  server: string;
  /** launchd writes the drone's terminal output here (systemd keeps it in the journal). */
  logFile: string;
}

export const systemdUnitName = "gadget-drone.service";
export const launchdLabel = "dev.gadget-code.drone";

/** One systemd word: quoted when needed, `%` and `$` doubled so systemd substitutes nothing. */
function systemdWord(value: string): string {
  const escaped = value.replaceAll("%", "%%").replaceAll("$", "$$");
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(escaped)) return escaped;
  return `"${escaped.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`;
}

/**
 * The systemd user unit (~/.config/systemd/user/gadget-drone.service). One SIGTERM drains: the
 * drone takes no new turn and finishes its running ones, so the stop may take a while; systemd
 * restarts it after a crash, never after a clean stop.
 */
export function systemdUnit(spec: ServiceSpec): string {
  const execStart = [spec.node, spec.command, ...spec.args].map(systemdWord).join(" ");
  return `[Unit]
Description=gadget-drone: runs Gadget Code turns on this machine for ${spec.server.replaceAll("%", "%%")}
StartLimitIntervalSec=300
StartLimitBurst=10

[Service]
Type=simple
ExecStart=${execStart}
Environment=${systemdWord(`PATH=${spec.path}`)}
Restart=on-failure
RestartSec=5
KillSignal=SIGTERM
KillMode=mixed
TimeoutStopSec=15min

[Install]
WantedBy=default.target
`;
}

function xml(value: string): string {
  return value
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;");
}

/**
 * The launchd agent (~/Library/LaunchAgents/dev.gadget-code.drone.plist): started at login, kept
 * alive after a crash but not after a clean exit, given time to drain when stopped.
 */
export function launchdPlist(spec: ServiceSpec): string {
  const args = [spec.node, spec.command, ...spec.args]
    .map((arg) => `    <string>${xml(arg)}</string>`)
    .join("\n");
  return `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key>
  <string>${launchdLabel}</string>
  <key>ProgramArguments</key>
  <array>
${args}
  </array>
  <key>EnvironmentVariables</key>
  <dict>
    <key>PATH</key>
    <string>${xml(spec.path)}</string>
  </dict>
  <key>RunAtLoad</key>
  <true/>
  <key>KeepAlive</key>
  <dict>
    <key>SuccessfulExit</key>
    <false/>
  </dict>
  <key>ThrottleInterval</key>
  <integer>5</integer>
  <key>ExitTimeOut</key>
  <integer>900</integer>
  <key>ProcessType</key>
  <string>Background</string>
  <key>StandardOutPath</key>
  <string>${xml(spec.logFile)}</string>
  <key>StandardErrorPath</key>
  <string>${xml(spec.logFile)}</string>
</dict>
</plist>
`;
}
