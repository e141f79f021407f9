// Which hosts a project's commands may reach through the filtering proxy, and which addresses
// those hosts may resolve to. An empty list allows nothing.
import { isIP } from "node:net";
import ipaddr from "ipaddr.js";

/** One parsed `allowedHosts` entry. */
export interface HostRule {
  /** The host as written, lower case, without brackets or port (`*.example.com` keeps its star). */
  host: string;
  /** Only this port, or any port when null. */
  port: number | null;
  /** `*.example.com`: any subdomain of example.com, not example.com itself. */
  wildcard: boolean;
  /** An IP literal or `localhost`: the one kind of entry allowed to reach non-public addresses. */
  local: boolean;
}

/** Why the proxy refused a connection. */
export interface Refusal {
  host: string;
  port: number;
  reason: string;
}

/** Host names as the proxy compares them: lower case, no trailing dot, no brackets. */
export function normaliseHost(host: string): string {
  let result = host.trim().toLowerCase();
  if (result.startsWith("[") && result.endsWith("]")) result = result.slice(1, -1);
  while (result.endsWith(".")) result = result.slice(0, -1);
  return result;
}

/**
 * Parses an entry such as `registry.npmjs.org`, `*.github.com:443`, `127.0.0.1:4873` or
 * `[::1]:8080`. Throws on anything else (the protocol's schema refuses those before they get here).
 */
export function parseHostRule(entry: string): HostRule {
  const text = entry.trim().toLowerCase();
  let host = text;
  let port: number | null = null;
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  if (bracketed) {
    host = bracketed[1] as string;
    port = bracketed[2] === undefined ? null : Number(bracketed[2]);
  } else if (isIP(text) !== 6) {
    const withPort = /^(.*):(\d+)$/.exec(text);
    if (withPort) {
      host = withPort[1] as string;
      port = Number(withPort[2]);
    }
  }
  host = normaliseHost(host);
  if (port !== null && !(Number.isInteger(port) && port >= 1 && port <= 65535)) {
    throw new Error(`"${entry}": port must be 1–65535`);
  }
  const wildcard = host.startsWith("*.");
  const name = wildcard ? host.slice(2) : host;
  const literal = isIP(name) !== 0;
  if (
    !literal &&
    !/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/.test(name)
  ) {
    throw new Error(`"${entry}" is not a host name, "*." and a domain, or an IP address`);
  }
  if (wildcard && literal) throw new Error(`"${entry}": a wildcard needs a domain, not an address`);
  return { host, port, wildcard, local: literal || host === "localhost" };
}

/** Whether an address is on the public internet (not loopback, private, link-local, metadata, …). */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === "ipv6" && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) {
    parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  }
  // ipaddr.js names every special range; only plain unicast is the public internet.
  return parsed.range() === "unicast";
}

/** The parsed allowlist of one project. */
export class HostAllowlist {
  readonly rules: readonly HostRule[];

  constructor(entries: readonly string[]) {
    this.rules = entries.map(parseHostRule);
  }

  /** The rule that lets `host:port` through, or null. Nothing matches an empty list. */
  match(host: string, port: number): HostRule | null {
    const name = normaliseHost(host);
    for (const rule of this.rules) {
      if (rule.port !== null && rule.port !== port) continue;
      if (rule.wildcard ? name.endsWith(rule.host.slice(1)) : name === rule.host) return rule;
    }
    return null;
  }

  /**
   * Whether `rule` may connect to `address`: public addresses always; loopback and private ones
   * only for an entry that names an address literally (or `localhost`), so an allowed host name
   * that resolves to 127.0.0.1 (DNS rebinding) still cannot reach the drone's own machine.
   */
  static mayReach(rule: HostRule, address: string): boolean {
    return isPublicAddress(address) || rule.local;
  }
}
