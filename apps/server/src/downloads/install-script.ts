// `GET /install.sh`: the POSIX sh script in install.sh with this server's public URL filled in.
import { readFileSync } from "node:fs";

const template = readFileSync(new URL("./install.sh", import.meta.url), "utf8");

/** The script for a server at `serverUrl`; the URL is single-quoted into it, quotes escaped. */
export function installScript(serverUrl: string): string {
  const quoted = serverUrl.replaceAll("'", `'\\''`);
  return template.replace("@SERVER_URL@", quoted);
}

/** The one line a user pastes on a machine with Node.js to install and register a drone. */
export function installLine(serverUrl: string, token: string): string {
  const script = shellQuote(`${serverUrl.replace(/\/+$/, "")}/install.sh`);
  return `curl -fsSL ${script} | sh -s -- --token ${shellQuote(token)}`;
}

/** Quotes a shell argument when it needs it. */
export function shellQuote(value: string): string {
  return /^[A-Za-z0-9_:/.=@%+-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;
}
