// /install.sh and the drone package over real HTTP: the script run by a real `sh` installs the
// package for a user without root and registers the drone; a tampered package is refused.
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import path from "node:path";
import { makeTempDir, makeTempDirSync, packDrone } from "@gadget/testkit";
import { afterAll, describe, expect, inject, it } from "vitest";
import { ApiClient, signup } from "../testing/api-client.ts";
import { startTestServer } from "../testing/test-server.ts";
import { useTestServer } from "../testing/use-test-server.ts";

const dronePackage = packDrone(makeTempDirSync("drone-package-"));
const packageBytes = readFileSync(dronePackage);
const fixture = useTestServer({ dronePackage });

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the served install script with `sh`, as `curl … | sh -s -- <args>` does, in its own HOME. */
async function runInstall(
  script: string,
  args: string[],
  env: Record<string, string>,
): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(
      "sh",
      ["-s", "--", ...args],
      { env: { PATH: process.env.PATH ?? "", ...env }, timeout: 60_000 },
      (error, stdout, stderr) =>
        resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
    child.stdin?.end(script);
  });
}

async function machine() {
  const home = await makeTempDir("install-home-");
  return {
    home,
    prefix: path.join(home, ".local"),
    env: { HOME: home, XDG_CONFIG_HOME: path.join(home, ".config"), TMPDIR: home },
  };
}

/** A proxy to `target` that flips one byte of every drone package passing through. */
async function tamperingProxy(target: string): Promise<{ url: string; server: Server }> {
  const server = createServer(async (request, response) => {
    const upstream = await fetch(`${target}${request.url}`);
    let body = Buffer.from(await upstream.arrayBuffer());
    if (request.url?.endsWith(".tgz")) {
      body = Buffer.from(body);
      body[body.length - 10] = (body[body.length - 10] ?? 0) ^ 0xff;
    }
    response.writeHead(upstream.status, {
      "content-type": upstream.headers.get("content-type") ?? "application/octet-stream",
    });
    response.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return { url: `http://127.0.0.1:${port}`, server };
}

/** A `node` that says it is `version` and fails every script, first on PATH in `dir`. */
async function makeFakeNode(dir: string, version: string): Promise<void> {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    path.join(dir, "node"),
    `#!/bin/sh\n[ "$1" = --version ] && { echo ${version}; exit 0; }\nexit 1\n`,
    { mode: 0o755 },
  );
}

describe("the drone package and /install.sh", () => {
  it("describe the package with its real sha256 and size, and serve exactly that file", async () => {
    const anonymous = new ApiClient(fixture.server.url);
    const info = await anonymous.get("/downloads/gadget-drone.json");
    expect(info.status).toBe(200);
    expect(info.body).toEqual({
      version: "0.1.0",
      protocol: expect.any(Number),
      sha256: createHash("sha256").update(packageBytes).digest("hex"),
      size: packageBytes.length,
      url: `${fixture.server.url}/downloads/gadget-drone-0.1.0.tgz`,
    });
    const download = await fetch(String(info.body.url));
    expect(download.headers.get("content-type")).toBe("application/gzip");
    expect(Buffer.from(await download.arrayBuffer()).equals(packageBytes)).toBe(true);
    for (const missing of ["gadget-drone-9.9.9.tgz", "gadget-drone.tgz", "..%2Fsecret"]) {
      expect((await anonymous.get(`/downloads/${missing}`)).status).toBe(404);
    }
  });

  it("installs for the user without root, registers with --token, passes other options on, and prints the start command", async () => {
    const user = await signup(fixture.server.url, "install");
    const created = await user.post("/api/drones/registration-tokens");
    expect(created.body.install).toBe(
      `curl -fsSL ${fixture.server.url}/install.sh | sh -s -- --token ${created.body.token}`,
    );
    const before = await user.get(`/api/drones/registration-tokens/${created.body._id}`);
    expect(before.body).toEqual({ used: false });

    const script = await fetch(`${fixture.server.url}/install.sh`);
    expect(script.headers.get("content-type")).toContain("text/x-shellscript");
    const text = await script.text();
    expect(text.startsWith("#!/bin/sh\n")).toBe(true);
    const host = await machine();
    const workspace = path.join(host.home, "checkouts");
    const run = await runInstall(
      text,
      ["--token", String(created.body.token), "--name", "laptop-2", "--workspace", workspace],
      host.env,
    );
    expect(run.stderr).toContain("Installed gadget-drone 0.1.0");
    expect(run.code).toBe(0);
    // The start command is the last line on stdout; ~/.local/bin is not on this PATH.
    expect(run.stdout.trim().split("\n").pop()?.trim()).toBe(
      `${host.prefix}/bin/gadget-drone start`,
    );
    expect(existsSync(path.join(host.prefix, "lib/gadget-drone/versions/0.1.0/main.js"))).toBe(
      true,
    );

    const config = JSON.parse(
      readFileSync(path.join(host.home, ".config/gadget-drone/config.json"), "utf8"),
    );
    expect(config).toMatchObject({ server: fixture.server.url, name: "laptop-2", workspace });
    const after = await user.get(`/api/drones/registration-tokens/${created.body._id}`);
    expect(after.body).toEqual({
      used: true,
      drone: { _id: config.droneId, name: "laptop-2", status: "offline" },
    });
    // Someone else's token is not found, whatever its id.
    const stranger = await signup(fixture.server.url, "install-stranger");
    expect((await stranger.get(`/api/drones/registration-tokens/${created.body._id}`)).status).toBe(
      404,
    );
  });

  it("installs into GADGET_DRONE_PREFIX without registering when no token is given", async () => {
    const host = await machine();
    const prefix = path.join(host.home, "opt");
    const text = await (await fetch(`${fixture.server.url}/install.sh`)).text();
    const run = await runInstall(text, [], { ...host.env, GADGET_DRONE_PREFIX: prefix });
    expect(run.code).toBe(0);
    expect(run.stderr).toContain(`gadget-drone register --server ${fixture.server.url}`);
    expect(existsSync(path.join(prefix, "bin/gadget-drone"))).toBe(true);
    expect(existsSync(path.join(host.home, ".config/gadget-drone/config.json"))).toBe(false);
  });

  it("refuses a package whose sha256 is not the server's, and installs nothing", async () => {
    // Between the machine and the server, something alters one byte of the package.
    const tampering = await tamperingProxy(fixture.server.url);
    try {
      const host = await machine();
      const text = await (await fetch(`${fixture.server.url}/install.sh`)).text();
      const run = await runInstall(text, ["--token", "gdr_unused"], {
        ...host.env,
        GADGET_DRONE_SERVER: tampering.url,
      });
      expect(run.code).not.toBe(0);
      expect(run.stderr).toContain("refusing to install it");
      expect(existsSync(path.join(host.prefix, "lib"))).toBe(false);
      expect(existsSync(path.join(host.prefix, "bin/gadget-drone"))).toBe(false);
    } finally {
      tampering.server.close();
    }
  });

  it("says how to get Node.js when the machine's is older than 20.19", async () => {
    const host = await machine();
    const bin = path.join(host.home, "old-node");
    await makeFakeNode(bin, "v18.19.0");
    const text = await (await fetch(`${fixture.server.url}/install.sh`)).text();
    const run = await runInstall(text, [], { ...host.env, PATH: `${bin}:${process.env.PATH}` });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("Node.js v18.19.0 is too old");
    expect(run.stderr).toContain("https://nodejs.org");
  });
});

describe("behind a PUBLIC_URL", () => {
  let server: Awaited<ReturnType<typeof startTestServer>> | undefined;
  afterAll(async () => {
    await server?.context.models.User.db.dropDatabase();
    await server?.close();
  });

  it("names the public URL in the install line, the script and the package's URL", async () => {
    server = await startTestServer({
      mongoUrl: inject("mongoUrl"),
      redisUrl: inject("redisUrl"),
      publicUrl: "https://gadget.example.com",
      dronePackage,
    });
    const user = await signup(server.url, "public");
    const created = await user.post("/api/drones/registration-tokens");
    expect(created.body.install).toBe(
      `curl -fsSL https://gadget.example.com/install.sh | sh -s -- --token ${created.body.token}`,
    );
    const info = await new ApiClient(server.url).get("/downloads/gadget-drone.json");
    expect(info.body.url).toBe("https://gadget.example.com/downloads/gadget-drone-0.1.0.tgz");
    const text = await (await fetch(`${server.url}/install.sh`)).text();
    expect(text).toContain("default_server='https://gadget.example.com'");
  });
});
