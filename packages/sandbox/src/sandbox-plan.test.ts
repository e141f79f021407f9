// What a sandbox is built from: the bwrap command line's mounts in the order that makes them
// hold, the macOS profile for a policy, the environment, and which toolchains become visible.
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bubblewrapArguments } from "./bubblewrap.ts";
import type { ConfinementPolicy } from "./sandbox.ts";
import { sandboxEnvironment } from "./sandbox-environment.ts";
import { seatbeltProfile } from "./seatbelt.ts";
import { type HostLayout, planSystemView, type SystemView } from "./system-view.ts";

const layout: HostLayout = {
  home: "/home/ada",
  searchPath: ["/usr/bin"],
  nodePath: "/usr/bin/node",
  uid: 1000,
};
const view: SystemView = {
  systemArguments: ["--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin"],
  toolchains: ["/home/ada/.nvm"],
  maskedFiles: ["/etc/shadow", "/home/ada/.cargo/credentials.toml"],
  maskedDirectories: ["/etc/ssl/private"],
  visibleRoots: ["/usr", "/home/ada/.nvm"],
};
const policy = (network: ConfinementPolicy["network"]["mode"]): ConfinementPolicy => ({
  workspace: "/home/ada/.local/share/gadget-drone/workspaces/app",
  home: "/home/ada/.local/share/gadget-drone/workspaces/.homes/app",
  network: { mode: network, allowedHosts: [] },
  hidden: ["/home/ada/.local/share/gadget-drone/workspaces", "/home/ada/.config/gadget-drone"],
});

function plan(network: ConfinementPolicy["network"]["mode"], proxySocket: string | null = null) {
  return bubblewrapArguments({
    view,
    layout,
    policy: policy(network),
    cwd: "/home/ada/.local/share/gadget-drone/workspaces/app/src",
    disableUserNamespaces: true,
    gitPaths: ["/home/ada/.local/share/gadget-drone/workspaces/app/.git"],
    tag: "0123456789abcdef",
    proxySocket,
    hiddenDirectories: policy(network).hidden,
  });
}

/** Index of the mount `flag source destination` in the arguments. */
function mountAt(args: string[], flag: string, destination: string): number {
  return args.findIndex((value, index) => value === flag && args[index + 2] === destination);
}

describe("bubblewrapArguments", () => {
  it("isolates everything, drops every capability and forbids nested user namespaces", () => {
    const args = plan("none");
    for (const flag of [
      "--unshare-user",
      "--unshare-pid",
      "--unshare-ipc",
      "--unshare-uts",
      "--unshare-net",
      "--die-with-parent",
      "--disable-userns",
    ]) {
      expect(args).toContain(flag);
    }
    expect(args.slice(args.indexOf("--cap-drop"), args.indexOf("--cap-drop") + 2)).toEqual([
      "--cap-drop",
      "ALL",
    ]);
    expect(args.slice(-2)).toEqual([
      "--chdir",
      "/home/ada/.local/share/gadget-drone/workspaces/app/src",
    ]);
  });

  it("shares the network only when the project's is open", () => {
    expect(plan("allowlist")).toContain("--unshare-net");
    expect(plan("open")).not.toContain("--unshare-net");
  });

  it("mounts in the order that makes each layer hold", () => {
    const args = plan("allowlist", "/run/proxy.sock");
    const workspace = "/home/ada/.local/share/gadget-drone/workspaces/app";
    const privateHome = policy("none").home;
    const emptyHome = args.findIndex(
      (value, index) => value === "--tmpfs" && args[index + 1] === "/home/ada",
    );
    const toolchain = mountAt(args, "--ro-bind", "/home/ada/.nvm");
    const hiddenRoot = args.findIndex(
      (value, index) =>
        value === "--tmpfs" && args[index + 1] === "/home/ada/.local/share/gadget-drone/workspaces",
    );
    const home = mountAt(args, "--bind", privateHome);
    const bound = mountAt(args, "--bind", workspace);
    const git = mountAt(args, "--ro-bind", `${workspace}/.git`);
    // The private home is bound at its own path, never at the real home's: nothing is mounted
    // into a directory a command could have written (a planted link would lead bwrap out).
    expect(args[home + 1]).toBe(privateHome);
    expect(args.some((value, index) => value === "--bind" && args[index + 2] === "/home/ada")).toBe(
      false,
    );
    // An empty home with the toolchains in it, then the drone's own directories covered, then
    // the private home and the worktree in that fresh tmpfs, then the worktree's .git read-only.
    expect(emptyHome).toBeGreaterThan(0);
    expect(emptyHome).toBeLessThan(toolchain);
    expect(toolchain).toBeLessThan(hiddenRoot);
    expect(hiddenRoot).toBeLessThan(home);
    expect(home).toBeLessThan(bound);
    expect(bound).toBeLessThan(git);
    expect(mountAt(args, "--bind", "/run/gadget/proxy.sock")).toBeGreaterThan(git);
    // Credential files inside a toolchain are covered after the toolchain is mounted.
    expect(mountAt(args, "--ro-bind", "/home/ada/.cargo/credentials.toml")).toBeGreaterThan(
      toolchain,
    );
    expect(mountAt(args, "--ro-bind", "/etc/shadow")).toBeGreaterThan(0);
  });
});

describe("seatbeltProfile", () => {
  const profile = (
    network: ConfinementPolicy["network"]["mode"],
    proxyPort: number | null = null,
  ) =>
    seatbeltProfile({
      policy: policy(network),
      temporaryDirectory: "/private/tmp/gadget-1",
      readable: ["/opt/homebrew"],
      proxyPort,
    });

  it("denies by default and writes only the worktree (not .git), the private home and its tmp", () => {
    const text = profile("none");
    expect(text.split("\n")[1]).toBe("(deny default)");
    expect(text).toContain(
      '(allow file-write* (require-all (subpath "/home/ada/.local/share/gadget-drone/workspaces/app") (require-not (subpath "/home/ada/.local/share/gadget-drone/workspaces/app/.git"))))',
    );
    expect(text).not.toMatch(/file-read\* .*"\/home\/ada"\)/);
    expect(text).not.toContain("network");
  });

  it("lets a session's worktree read the clone's git directory, and write none of it", () => {
    const common = "/home/ada/.local/share/gadget-drone/workspaces/app/.git";
    const text = seatbeltProfile({
      policy: {
        ...policy("none"),
        workspace: "/home/ada/.local/share/gadget-drone/workspaces/.worktrees/app/s1",
      },
      temporaryDirectory: "/private/tmp/gadget-1",
      readable: [],
      proxyPort: null,
      gitPaths: [`${common}/worktrees/s1`, common],
    });
    const reads = text.split("\n").filter((line) => line.startsWith("(allow file-read*"));
    expect(reads.some((line) => line.includes(`(subpath "${common}")`))).toBe(true);
    const writes = text.split("\n").filter((line) => line.startsWith("(allow file-write*"));
    expect(writes.some((line) => line.includes(common))).toBe(false);
  });

  it("lets an allowlist reach only its proxy, and an open network everything", () => {
    expect(profile("allowlist", 4321)).toContain(
      '(allow network-outbound (remote tcp "localhost:4321"))',
    );
    expect(profile("allowlist", 4321)).not.toContain("(allow network*)");
    expect(profile("open")).toContain("(allow network*)");
  });

  it("quotes paths so a hostile name cannot end the string", () => {
    const text = seatbeltProfile({
      policy: { ...policy("none"), workspace: '/tmp/a") (allow default) ("' },
      temporaryDirectory: "/tmp/t",
      readable: [],
      proxyPort: null,
    });
    // With escaped quotes taken out, every line's quotes pair up: no string was ended early.
    for (const line of text.split("\n")) {
      expect(line.replaceAll('\\"', "").split('"').length % 2, line).toBe(1);
    }
    expect(text).toContain('\\"');
  });
});

describe("sandboxEnvironment", () => {
  const base = {
    PATH: "/usr/bin",
    HOME: "/home/ada",
    SSH_AUTH_SOCK: "/run/user/1000/ssh-agent",
    DBUS_SESSION_BUS_ADDRESS: "unix:path=/run/user/1000/bus",
    XDG_CONFIG_HOME: "/data/config",
    HTTPS_PROXY: "http://corp-proxy:3128",
    NO_PROXY: "localhost",
    TMPDIR: "/var/folders/x",
  };

  it("drops the user's session sockets, XDG paths and proxies, and points HOME and TMPDIR inside", () => {
    const env = sandboxEnvironment(base, { home: "/home/ada", cwd: "/w", network: "none" });
    expect(env).toEqual({
      PATH: "/usr/bin",
      HOME: "/home/ada",
      TMPDIR: "/tmp",
      TMP: "/tmp",
      TEMP: "/tmp",
      PWD: "/w",
    });
  });

  it("routes an allowlist through the bridge and keeps the drone's proxies on an open network", () => {
    const listed = sandboxEnvironment(base, {
      home: "/home/ada",
      cwd: "/w",
      network: "allowlist",
      proxy: { HTTPS_PROXY: "http://127.0.0.1:3128" },
    });
    expect(listed.HTTPS_PROXY).toBe("http://127.0.0.1:3128");
    expect(listed.NO_PROXY).toBeUndefined();
    const open = sandboxEnvironment(base, { home: "/home/ada", cwd: "/w", network: "open" });
    expect(open.HTTPS_PROXY).toBe("http://corp-proxy:3128");
  });
});

describe("planSystemView", () => {
  let home: string;

  beforeAll(async () => {
    home = await mkdtemp(path.join(tmpdir(), "gadget-view-"));
    for (const directory of [
      ".nvm/versions/node/v20/bin",
      ".cargo/bin",
      ".rustup/toolchains",
      ".local/bin",
      ".local/share/gadget-drone/workspaces",
      ".ssh/bin",
      "bin",
    ]) {
      await mkdir(path.join(home, directory), { recursive: true });
    }
    await writeFile(path.join(home, ".cargo", "credentials.toml"), "token = 'secret'\n");
  });
  afterAll(async () => {
    await rm(home, { recursive: true, force: true });
  });

  it("shows PATH's toolchains under the home directory, never its secret or shared directories", async () => {
    const planned = await planSystemView(
      {
        home,
        searchPath: [
          path.join(home, ".nvm/versions/node/v20/bin"),
          path.join(home, ".cargo/bin"),
          path.join(home, ".local/bin"),
          path.join(home, ".ssh/bin"),
          path.join(home, "bin"),
          "/usr/bin",
        ],
        nodePath: "/usr/bin/node",
        uid: 1000,
      },
      [path.join(home, ".local/share/gadget-drone/workspaces")],
    );
    expect(planned.toolchains).toEqual(
      [".cargo", ".local/bin", ".nvm", ".rustup", "bin"].map((name) => path.join(home, name)),
    );
    expect(planned.maskedFiles).toContain(path.join(home, ".cargo", "credentials.toml"));
    expect(planned.systemArguments).toEqual(expect.arrayContaining(["--ro-bind", "/usr", "/usr"]));
  });
});
