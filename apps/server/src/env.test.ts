// The server environment is validated at start, with one clear line per bad variable.
import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import { makeTempDirSync } from "@gadget/testkit";
import { describe, expect, it } from "vitest";
import { EnvError, loadEnv } from "./env.ts";

const dataDir = () => makeTempDirSync("gadget-env-");

describe("loadEnv", () => {
  it("applies the documented defaults", () => {
    const env = loadEnv({ GADGET_DATA_DIR: dataDir() });
    expect(env).toMatchObject({
      port: 3000,
      host: "127.0.0.1",
      logLevel: "info",
      droneGraceMs: 60_000,
    });
  });

  it("reads where the web build is and which proxies to trust", () => {
    const directory = dataDir();
    expect(loadEnv({ GADGET_DATA_DIR: directory })).toMatchObject({
      trustProxy: false,
      webDir: expect.stringMatching(/apps\/web\/dist$/),
    });
    expect(
      loadEnv({
        GADGET_DATA_DIR: directory,
        GADGET_TRUST_PROXY: "true",
        GADGET_WEB_DIR: "/srv/web",
      }),
    ).toMatchObject({ trustProxy: true, webDir: "/srv/web" });
    expect(
      loadEnv({ GADGET_DATA_DIR: directory, GADGET_TRUST_PROXY: "10.0.0.0/8,127.0.0.1" })
        .trustProxy,
    ).toEqual(["10.0.0.0/8", "127.0.0.1"]);
    expect(() => loadEnv({ GADGET_DATA_DIR: directory, GADGET_TRUST_PROXY: "yes please" })).toThrow(
      /GADGET_TRUST_PROXY: must be "true", "false" or proxy addresses/,
    );
  });

  it("names every bad variable", () => {
    let error: unknown;
    try {
      loadEnv({
        GADGET_DATA_DIR: dataDir(),
        PORT: "eighty",
        DRONE_GRACE_MS: "-5",
        MONGO_URL: "postgres://x",
        LOG_LEVEL: "loud",
        PUBLIC_URL: "not a url",
      });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(EnvError);
    const problems = (error as EnvError).problems.map((problem) => problem.split(":")[0]).sort();
    expect(problems).toEqual(["DRONE_GRACE_MS", "LOG_LEVEL", "MONGO_URL", "PORT", "PUBLIC_URL"]);
    expect((error as EnvError).message).toMatch(/PORT: .*\(got "eighty"\)/);
  });

  it("requires GADGET_SECRET in production and never echoes it", () => {
    expect(() => loadEnv({ NODE_ENV: "production", GADGET_DATA_DIR: dataDir() })).toThrow(
      /GADGET_SECRET: is required when NODE_ENV=production/,
    );
    expect(() => loadEnv({ NODE_ENV: "production", GADGET_SECRET: "short-secret" })).toThrow(
      EnvError,
    );
    try {
      loadEnv({ NODE_ENV: "production", GADGET_SECRET: "short-secret" });
    } catch (error) {
      expect((error as Error).message).not.toContain("short-secret");
    }
  });

  it("outside production, generates a secret once and keeps it in the data dir (mode 0600)", () => {
    const directory = dataDir();
    const first = loadEnv({ GADGET_DATA_DIR: directory });
    const second = loadEnv({ GADGET_DATA_DIR: directory });
    expect(first.secret.length).toBeGreaterThanOrEqual(32);
    expect(second.secret).toBe(first.secret);
    const file = path.join(directory, "secret");
    expect(readFileSync(file, "utf8").trim()).toBe(first.secret);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });
});
