// docker/: the compose file, the Dockerfiles and the load balancer agree with each other and with
// the repository, and the server environment they set is one the server accepts. No Docker engine
// is needed; compose.integration.test.ts runs what the images run.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadEnv } from "../../src/env.ts";
import {
  type ComposeService,
  copyInstructions,
  deniesPath,
  dockerDir,
  interpolate,
  interpolateAll,
  isDockerIgnored,
  MissingVariableError,
  readComposeFile,
  readDockerfile,
  readEnvFile,
  readHaproxyConfig,
  repoRoot,
  serviceEnvironment,
  stageEnvironment,
} from "./deployment-files.ts";

const compose = readComposeFile();
const services = compose.services;
const example = readEnvFile(path.join(dockerDir, ".env.example"));
/** .env.example as a user fills it in: the one value it leaves empty on purpose is the secret. */
const filled: Record<string, string> = {
  ...example,
  GADGET_SECRET: "0123456789abcdef0123456789abcdef0123456789abcdef",
};
const dockerignore = readFileSync(path.join(repoRoot, ".dockerignore"), "utf8");

const built = Object.entries(services).filter(
  (entry): entry is [string, ComposeService & { build: { context: string } }] =>
    entry[1].build !== undefined,
);
const servers = Object.entries(services).filter(
  ([, service]) => service.build?.dockerfile === "docker/server.Dockerfile",
);
const serverDockerfile = readDockerfile(path.join(dockerDir, "server.Dockerfile"));

function dockerfileOf(service: ComposeService): string {
  if (!service.build) throw new Error("not built here");
  return path.resolve(dockerDir, service.build.context, service.build.dockerfile ?? "Dockerfile");
}

/** Workspace packages by name, with their scripts. */
function workspacePackages(): Map<string, { scripts: Record<string, string> }> {
  const packages = new Map<string, { scripts: Record<string, string> }>();
  for (const group of ["apps", "packages"]) {
    for (const name of readdirSync(path.join(repoRoot, group))) {
      const manifest = path.join(repoRoot, group, name, "package.json");
      if (!existsSync(manifest)) continue;
      const parsed = JSON.parse(readFileSync(manifest, "utf8"));
      packages.set(parsed.name, { scripts: parsed.scripts ?? {} });
    }
  }
  return packages;
}

describe("docker/compose.yml", () => {
  it("runs MongoDB 7, Redis 7 with AOF and noeviction, two servers behind a balancer, one drone", () => {
    expect(services.mongo?.image).toMatch(/^mongo:7/);
    expect(services.redis?.image).toMatch(/^redis:7/);
    const redisCommand = [services.redis?.command ?? []].flat().join(" ");
    expect(redisCommand).toContain("--appendonly yes");
    expect(redisCommand).toContain("--maxmemory-policy noeviction");
    expect(servers.map(([name]) => name)).toEqual(["server-1", "server-2"]);
    // biome-ignore lint/suspicious/noTemplateCurlyInString: Compose's interpolation, verbatim
    expect(services.lb?.ports).toEqual(["${GADGET_HTTP_PORT:-8080}:8080"]);
    expect(services.drone?.build?.dockerfile).toBe("docker/drone.Dockerfile");
  });

  it("gives every service a healthcheck, and starts each only after what it needs is healthy", () => {
    for (const [name, service] of Object.entries(services)) {
      expect(service.healthcheck?.test, `${name} has a healthcheck`).toBeDefined();
      for (const [dependency, { condition }] of Object.entries(service.depends_on ?? {})) {
        expect(services[dependency], `${name} depends on ${dependency}`).toBeDefined();
        expect(condition, `${name} → ${dependency}`).toBe("service_healthy");
      }
    }
    for (const [, server] of servers) {
      expect(Object.keys(server.depends_on ?? {}).sort()).toEqual(["mongo", "redis"]);
    }
    expect(Object.keys(services.drone?.depends_on ?? {})).toEqual(["lb"]);
  });

  it("keeps MongoDB, Redis and the drone's config and journal on named volumes", () => {
    const mounts = (name: string) => services[name]?.volumes ?? [];
    expect(mounts("mongo")).toContain("mongo-data:/data/db");
    expect(mounts("redis")).toContain("redis-data:/data");
    expect(mounts("drone")).toContain("drone-data:/data");
    for (const volume of ["mongo-data", "redis-data", "drone-data"])
      expect(Object.keys(compose.volumes ?? {})).toContain(volume);
  });

  it("builds from Dockerfiles and a context that exist", () => {
    expect(built.map(([name]) => name).sort()).toEqual(["drone", "server-1", "server-2"]);
    for (const [name, service] of built) {
      const context = path.resolve(dockerDir, service.build.context);
      expect(statSync(context).isDirectory(), `${name}: context ${context}`).toBe(true);
      expect(
        existsSync(path.join(context, "pnpm-workspace.yaml")),
        `${name}: context is the repo`,
      ).toBe(true);
      expect(existsSync(dockerfileOf(service)), `${name}: ${dockerfileOf(service)}`).toBe(true);
    }
    expect(existsSync(path.join(dockerDir, "haproxy.cfg"))).toBe(true);
    expect(services.lb?.volumes).toContain("./haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro");
  });

  it("refuses to start without GADGET_SECRET, naming it", () => {
    // .env.example copied as it is leaves the secret empty.
    expect(() => serviceEnvironment(services["server-1"] ?? {}, example)).toThrow(
      MissingVariableError,
    );
    expect(() => serviceEnvironment(services["server-1"] ?? {}, example)).toThrow(/GADGET_SECRET/);
  });

  it("sets a server environment that loadEnv accepts, over the image's own ENV", () => {
    const image = stageEnvironment(serverDockerfile);
    for (const [name, server] of servers) {
      const environment = { ...image, ...serviceEnvironment(server, filled) };
      const env = loadEnv(environment);
      expect(env, name).toMatchObject({
        nodeEnv: "production",
        host: "0.0.0.0",
        port: 3000,
        mongoUrl: "mongodb://mongo:27017/gadget?replicaSet=rs0",
        redisUrl: "redis://redis:6379",
        publicUrl: "http://localhost:8080",
        secret: filled.GADGET_SECRET,
        webDir: "/app/web",
        dataDir: "/data",
        logLevel: "info",
        droneGraceMs: 60_000,
      });
    }
    // Without docker/.env at all the defaults still make a valid environment, and PUBLIC_URL
    // follows the published port.
    const bare = serviceEnvironment(servers[0]?.[1] ?? {}, {
      GADGET_SECRET: filled.GADGET_SECRET,
      GADGET_HTTP_PORT: "9000",
    });
    expect(loadEnv({ ...image, ...bare }).publicUrl).toBe("http://localhost:9000");
  });

  it("reads only variables that docker/.env.example documents", () => {
    const seen = new Set<string>();
    for (const service of Object.values(services)) {
      serviceEnvironment(service, filled, seen);
      for (const port of service.ports ?? []) interpolate(port, filled, seen);
      interpolateAll(service.networks, filled, seen);
    }
    interpolateAll(compose.networks, filled, seen);
    expect([...seen].filter((name) => !(name in example))).toEqual([]);
  });

  it("points the drone at the load balancer, which sends it to every server replica", () => {
    const drone = serviceEnvironment(services.drone ?? {}, filled);
    const target = new URL(drone.GADGET_SERVER_URL ?? "");
    expect(services[target.hostname], "the drone's server is a service").toBe(services.lb);

    const haproxy = readFileSync(path.join(dockerDir, "haproxy.cfg"), "utf8");
    expect(haproxy).toMatch(new RegExp(`^\\s*bind :${target.port}$`, "m"));
    const backends = [...haproxy.matchAll(/^\s*server\s+(\S+)\s+([^:\s]+):(\d+)/gm)].map(
      (match) => ({ host: match[2], port: match[3] }),
    );
    const port = stageEnvironment(serverDockerfile).PORT;
    expect(backends).toEqual(servers.map(([name]) => ({ host: name, port })));
    // Ready servers only, and sticky sessions for the web IDE's long-polling.
    expect(haproxy).toMatch(/option httpchk GET \/readyz/);
    expect(haproxy).toMatch(/^\s*cookie \S+ insert/m);
  });
});

describe("the Dockerfiles", () => {
  const dockerfiles = [...new Set(built.map(([, service]) => dockerfileOf(service)))];

  it.each(dockerfiles.map((file) => [path.relative(repoRoot, file), file]))(
    "%s copies only files that exist in the build context and are not .dockerignored",
    (_name, file) => {
      const dockerfile = readDockerfile(file);
      const copies = copyInstructions(dockerfile);
      expect(copies.length).toBeGreaterThan(0);
      for (const copy of copies) {
        if (copy.from !== undefined) {
          expect(dockerfile.stages, `COPY --from=${copy.from}`).toContain(copy.from);
          continue;
        }
        for (const source of copy.sources) {
          if (source === ".") continue;
          expect(existsSync(path.join(repoRoot, source)), `COPY ${source}`).toBe(true);
          expect(isDockerIgnored(dockerignore, source), `${source} is .dockerignored`).toBe(false);
        }
      }
    },
  );

  it.each(dockerfiles.map((file) => [path.relative(repoRoot, file), file]))(
    "%s runs build scripts that the workspace packages have",
    (_name, file) => {
      const packages = workspacePackages();
      const runs = readDockerfile(file)
        .instructions.filter(({ keyword }) => keyword === "RUN")
        .map(({ rest }) => rest);
      const calls = runs.flatMap((run) =>
        [...run.matchAll(/pnpm --filter "?([^\s"]+?)"? (\w+)/g)].map((match) => ({
          name: match[1] ?? "",
          script: match[2] ?? "",
        })),
      );
      expect(calls.length).toBeGreaterThan(0);
      for (const { name, script } of calls) {
        if (script === "build") expect(packages.get(name)?.scripts.build, name).toBeDefined();
      }
    },
  );

  it("keep the dependencies and builds of this machine out of the build context", () => {
    for (const ignored of [
      "node_modules",
      "apps/server/node_modules/fastify",
      "apps/web/dist/index.html",
      ".git/HEAD",
      ".gadget/secret",
      "docker/.env",
    ])
      expect(isDockerIgnored(dockerignore, ignored), ignored).toBe(true);
    for (const kept of ["pnpm-lock.yaml", "apps/server/src/cli.ts", "docker/.env.example"])
      expect(isDockerIgnored(dockerignore, kept), kept).toBe(false);
  });

  it("run as a non-root user from node:20-bookworm-slim", () => {
    for (const file of ["server.Dockerfile", "drone.Dockerfile"]) {
      const dockerfile = readDockerfile(path.join(dockerDir, file));
      const last = dockerfile.stages.length - 1;
      const final = dockerfile.instructions.filter(({ stage }) => stage === last);
      expect(final[0]?.rest, file).toMatch(/^node:20-bookworm-slim\b/);
      const users = final.filter(({ keyword }) => keyword === "USER").map(({ rest }) => rest);
      expect(users.at(-1), file).toBeDefined();
      expect(users.at(-1), file).not.toMatch(/^(root|0)(:|$)/);
    }
  });
});

describe("the configuration reference", () => {
  const reference = readFileSync(path.join(repoRoot, "docs/configuration.md"), "utf8");

  it("names every variable the server and the drone read", () => {
    const serverEnv = readFileSync(path.join(repoRoot, "apps/server/src/env.ts"), "utf8");
    const schema = serverEnv.slice(serverEnv.indexOf("const envSchema"));
    const serverVariables = [...schema.matchAll(/^ {2}([A-Z][A-Z0-9_]+):/gm)].map(
      (match) => match[1] ?? "",
    );
    expect(serverVariables).toContain("GADGET_SECRET");
    const droneEnv = readFileSync(path.join(repoRoot, "apps/drone/src/env.ts"), "utf8");
    const droneVariables = [...droneEnv.matchAll(/process\.env\.([A-Z][A-Z0-9_]+)/g)].map(
      (match) => match[1] ?? "",
    );
    expect(droneVariables).toContain("GADGET_DRONE_CONFIG");
    for (const variable of new Set([...serverVariables, ...droneVariables]))
      expect(reference, variable).toContain(`\`${variable}\``);
  });
});

/** An IPv4 address as a number; throws on anything else. */
function ipv4(address: string): number {
  const parts = address.split(".").map(Number);
  if (parts.length !== 4 || parts.some((part) => !Number.isInteger(part) || part < 0 || part > 255))
    throw new Error(`not an IPv4 address: ${address}`);
  return parts.reduce((value, part) => value * 256 + part, 0);
}

/** The first and last address of an IPv4 CIDR. */
function cidrRange(cidr: string): { first: number; last: number } {
  const [address = "", bits = ""] = cidr.split("/");
  const size = 2 ** (32 - Number(bits));
  const first = Math.floor(ipv4(address) / size) * size;
  return { first, last: first + size - 1 };
}

function inCidr(address: string, cidr: string): boolean {
  const { first, last } = cidrRange(cidr);
  return ipv4(address) >= first && ipv4(address) <= last;
}

// Security review, finding 9: with GADGET_TRUST_PROXY=true and `option forwardfor` (which appends)
// a client chose its address in the first X-Forwarded-For entry and was never login-limited, and
// HAProxy's `path /metrics` rule let /%6detrics through to the servers' unauthenticated /metrics.
describe("client addresses and /metrics behind the balancer", () => {
  const haproxy = readHaproxyConfig();
  const publishedPort = (services.lb?.ports ?? []).map((port) => port.split(":").at(-1));
  const publicFrontends = haproxy.filter(
    ({ kind, lines }) =>
      kind === "frontend" &&
      lines.some((line) => publishedPort.includes(/^bind \S*:(\d+)/.exec(line)?.[1])),
  );
  const publicFrontend = publicFrontends[0] ?? { kind: "frontend", name: "", lines: [] };
  const balancerAddress = (variables: Record<string, string>) =>
    interpolateAll(services.lb?.networks, variables)?.default?.ipv4_address;

  it("has one public frontend, on the balancer's published port", () => {
    expect(publishedPort).toEqual(["8080"]);
    expect(publicFrontends.map(({ name }) => name)).toHaveLength(1);
  });

  it("servers believe X-Forwarded-For from the balancer's fixed address only, never from `true`", () => {
    const image = stageEnvironment(serverDockerfile);
    for (const variables of [filled, { ...filled, GADGET_NETWORK_PREFIX: "10.99.7" }]) {
      const address = balancerAddress(variables);
      expect(() => ipv4(address ?? ""), "the balancer has a fixed IPv4 address").not.toThrow();
      for (const [name, server] of servers) {
        const environment = serviceEnvironment(server, variables);
        expect(environment.GADGET_TRUST_PROXY, name).not.toBe("true");
        expect(loadEnv({ ...image, ...environment }).trustProxy, name).toEqual([address]);
      }
    }
    expect(balancerAddress({ ...filled, GADGET_NETWORK_PREFIX: "10.99.7" })).toBe("10.99.7.2");
  });

  it("gives the balancer an address of the network that Docker never hands to another container", () => {
    const address = balancerAddress(filled) ?? "";
    const config = interpolateAll(compose.networks?.default, filled)?.ipam?.config ?? [];
    expect(config).toHaveLength(1);
    const { subnet = "", ip_range: dynamic = "" } = config[0] ?? {};
    expect(inCidr(address, subnet), `${address} in ${subnet}`).toBe(true);
    // Not the network's own address nor the gateway Docker takes (the subnet's first host).
    expect(ipv4(address)).toBeGreaterThan(cidrRange(subnet).first + 1);
    // Containers without a fixed address get one from ip_range, inside the subnet, not this one.
    expect(cidrRange(dynamic).first).toBeGreaterThanOrEqual(cidrRange(subnet).first);
    expect(cidrRange(dynamic).last).toBeLessThanOrEqual(cidrRange(subnet).last);
    expect(inCidr(address, dynamic), `${address} outside ${dynamic}`).toBe(false);
    // Every other service is on the same network, without a fixed address of its own.
    for (const [name, service] of Object.entries(services)) {
      if (name === "lb") continue;
      const networks = Object.keys(service.networks ?? { default: null });
      expect(networks, name).toEqual(["default"]);
      expect(service.networks?.default?.ipv4_address, name).toBeUndefined();
    }
  });

  it("replaces a forged X-Forwarded-For with the address HAProxy sees instead of appending to it", () => {
    const everything = haproxy.flatMap(({ lines }) => lines);
    // `option forwardfor` appends: a client's "1.2.3.4" would stay the header's first entry.
    expect(everything.filter((line) => /^(no\s+)?option\s+forwardfor\b/.test(line))).toEqual([]);
    expect(
      everything.filter((line) => /^http-request\s+add-header\s+x-forwarded-for\b/i.test(line)),
    ).toEqual([]);
    const forwardedFor = publicFrontend.lines.filter((line) =>
      /^http-request\s+(set|add|del|replace)-(header|value)\s+x-forwarded-for\b/i.test(line),
    );
    expect(forwardedFor).toEqual(["http-request set-header X-Forwarded-For %[src]"]);
    // Nothing else a client sends about itself reaches the servers, which trust the balancer.
    expect(publicFrontend.lines).toContain("http-request del-header X-Forwarded-Host");
    expect(publicFrontend.lines).toContain("http-request del-header Forwarded");
    expect(publicFrontend.lines).toContainEqual(
      expect.stringMatching(/^http-request set-header X-Forwarded-Proto /),
    );
  });

  it.each([
    "/metrics",
    "/%6detrics",
    "/%6D%65%74%72%69%63%73",
    "/METRICS",
    "/Metrics",
    "//metrics",
    "/metrics/",
    "/./metrics",
    "/x/../metrics",
    "/%2e/metrics",
    "/%2Fmetrics",
    "/metrics?format=prometheus",
    "/metrics;jsessionid=1",
    "http://lb:8080/metrics",
  ])("refuses %s on the public frontend", (target) => {
    expect(deniesPath(publicFrontend, target)).toBe(true);
  });

  it("still lets the web IDE, its assets, the API and Socket.IO through", () => {
    for (const target of [
      "/",
      "/projects",
      "/assets/metrics-4f2a1c.js",
      "/api/me",
      "/api/turns/abc/stream",
      "/socket.io/?EIO=4&transport=polling",
      "/readyz",
    ])
      expect(deniesPath(publicFrontend, target), target).toBe(false);
  });

  it("publishes only the balancer: Prometheus scrapes the servers on the compose network, as docs/operations.md says", () => {
    const published = Object.entries(services)
      .filter(([, service]) => (service.ports ?? []).length > 0)
      .map(([name]) => name);
    expect(published).toEqual(["lb"]);
    const operations = readFileSync(path.join(repoRoot, "docs/operations.md"), "utf8");
    const targets = /targets:\s*\[([^\]]*)\]/.exec(operations)?.[1] ?? "";
    const port = stageEnvironment(serverDockerfile).PORT;
    expect(targets.split(",").map((target) => target.trim().replace(/^"|"$/g, ""))).toEqual(
      servers.map(([name]) => `${name}:${port}`),
    );
  });

  it("keeps a client's x-request-id only when it is one header holding a token the server keeps", () => {
    const rule = publicFrontend.lines.find((line) =>
      /^http-request set-header x-request-id %\[unique-id\]/i.test(line),
    );
    expect(rule).toBeDefined();
    expect(rule).toContain("unless { req.fhdr_cnt(x-request-id) eq 1 }");
    const pattern = /\{ req\.fhdr\(x-request-id\) -m reg (\S+) \}/.exec(rule ?? "")?.[1] ?? "^$";
    const kept = new RegExp(pattern);
    for (const id of ["abc-123", "7F000001:A2BB_7F000001:1F90_6B054178_0015", "x".repeat(100)])
      expect(kept.test(id), id).toBe(true);
    for (const id of ["a,b", "a b", "x".repeat(101), "", "<script>"])
      expect(kept.test(id), id).toBe(false);
  });
});
