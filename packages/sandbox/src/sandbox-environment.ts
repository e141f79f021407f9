// The environment a sandboxed command starts with: the runner's scrubbed one, minus what points
// at the drone's own session (agent sockets, displays, proxies), with HOME and TMPDIR inside.
import type { NetworkMode } from "@gadget/protocol";
import { proxyVariableNames } from "./network/bridge.ts";

/** Variables that name the drone user's session: sockets and displays a command must not find. */
const sessionVariables = [
  "SSH_AUTH_SOCK",
  "SSH_AGENT_PID",
  "GPG_AGENT_INFO",
  "DBUS_SESSION_BUS_ADDRESS",
  "XDG_RUNTIME_DIR",
  "DISPLAY",
  "WAYLAND_DISPLAY",
  "XAUTHORITY",
  "KRB5CCNAME",
  "OLDPWD",
];

/**
 * Builds a sandboxed command's environment.
 * @example sandboxEnvironment(scrubbed, { home: "/home/ada", cwd, network: "none" })
 */
export function sandboxEnvironment(
  base: Readonly<Record<string, string>>,
  options: { home: string; cwd: string; network: NetworkMode; proxy?: Record<string, string> },
): Record<string, string> {
  const env: Record<string, string> = { ...base };
  for (const name of sessionVariables) delete env[name];
  // XDG_* may point outside the home directory; unset, programs use their defaults under HOME.
  for (const name of Object.keys(env)) if (name.startsWith("XDG_")) delete env[name];
  // An open network keeps the drone's proxies; otherwise only the filtering proxy, if any.
  if (options.network !== "open") for (const name of proxyVariableNames) delete env[name];
  return {
    ...env,
    ...(options.proxy ?? {}),
    HOME: options.home,
    TMPDIR: "/tmp",
    TMP: "/tmp",
    TEMP: "/tmp",
    PWD: options.cwd,
  };
}
