// Which hosts an allowlist lets through, and which addresses a listed host may reach.
import { describe, expect, it } from "vitest";
import { HostAllowlist, isPublicAddress, parseHostRule } from "./host-allowlist.ts";

describe("allowedHosts entries", () => {
  it("reads names, wildcards, ports and address literals", () => {
    expect(parseHostRule("Registry.NPMJS.org.")).toEqual({
      host: "registry.npmjs.org",
      port: null,
      wildcard: false,
      local: false,
    });
    expect(parseHostRule("*.github.com:443")).toMatchObject({
      host: "*.github.com",
      port: 443,
      wildcard: true,
    });
    expect(parseHostRule("127.0.0.1:4873")).toMatchObject({
      host: "127.0.0.1",
      port: 4873,
      local: true,
    });
    expect(parseHostRule("[::1]:8080")).toMatchObject({ host: "::1", port: 8080, local: true });
    expect(parseHostRule("::1")).toMatchObject({ host: "::1", port: null, local: true });
    expect(parseHostRule("localhost")).toMatchObject({ local: true });
  });

  it("refuses what is not a host", () => {
    for (const entry of [
      "",
      "*",
      "*.1.2.3.4",
      "a b",
      "http://x.com",
      "x.com:0",
      "x.com:70000",
      "-x.com",
    ]) {
      expect(() => parseHostRule(entry), entry).toThrow();
    }
  });
});

describe("HostAllowlist", () => {
  it("allows nothing when empty", () => {
    const allowlist = new HostAllowlist([]);
    for (const [host, port] of [
      ["example.com", 443],
      ["127.0.0.1", 80],
      ["localhost", 3000],
    ] as const) {
      expect(allowlist.match(host, port)).toBeNull();
    }
  });

  it("matches exact names, subdomains of a wildcard (not its apex), and ports", () => {
    const allowlist = new HostAllowlist(["registry.npmjs.org", "*.github.com", "127.0.0.1:4873"]);
    expect(allowlist.match("REGISTRY.npmjs.org", 443)).not.toBeNull();
    expect(allowlist.match("evil-registry.npmjs.org", 443)).toBeNull();
    expect(allowlist.match("registry.npmjs.org.evil.com", 443)).toBeNull();
    expect(allowlist.match("api.github.com", 443)).not.toBeNull();
    expect(allowlist.match("github.com", 443)).toBeNull();
    expect(allowlist.match("notgithub.com", 443)).toBeNull();
    expect(allowlist.match("127.0.0.1", 4873)).not.toBeNull();
    expect(allowlist.match("127.0.0.1", 4874)).toBeNull();
  });

  it("lets a host name reach only public addresses; a literal or localhost may reach its own", () => {
    const [name, literal, local] = new HostAllowlist(["example.com", "10.0.0.5", "localhost"])
      .rules;
    for (const address of [
      "127.0.0.1",
      "10.1.2.3",
      "192.168.0.1",
      "169.254.169.254",
      "::1",
      "fd00::1",
      "::ffff:127.0.0.1",
      "0.0.0.0",
      "100.64.0.1",
    ]) {
      expect(HostAllowlist.mayReach(name!, address), address).toBe(false);
    }
    expect(HostAllowlist.mayReach(name!, "93.184.216.34")).toBe(true);
    expect(HostAllowlist.mayReach(name!, "2606:2800:220:1:248:1893:25c8:1946")).toBe(true);
    expect(HostAllowlist.mayReach(literal!, "10.0.0.5")).toBe(true);
    expect(HostAllowlist.mayReach(local!, "127.0.0.1")).toBe(true);
  });

  it("knows public from special addresses", () => {
    expect(isPublicAddress("8.8.8.8")).toBe(true);
    expect(isPublicAddress("169.254.169.254")).toBe(false);
    expect(isPublicAddress("not an address")).toBe(false);
  });
});
