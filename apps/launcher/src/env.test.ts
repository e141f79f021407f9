// `pnpm start` reads its variables with the server's own schema and defaults.
import { describe, expect, it } from "vitest";
import { loadEnv } from "./env.ts";

describe("loadEnv", () => {
  it("takes the server's defaults and keeps data under the repository", () => {
    const env = loadEnv("/repository", { MONGO_URL: "" });
    expect(env).toMatchObject({
      dataDir: "/repository/.gadget",
      host: "127.0.0.1",
      port: 3000,
      mongoUrl: undefined,
      redisUrl: undefined,
    });
  });

  it("refuses what the server would refuse, naming each variable", () => {
    expect(() => loadEnv("/repository", { PORT: "eighty", REDIS_URL: "http://x" })).toThrow(
      /PORT: must be a port number \(0-65535\) \(got "eighty"\)\nREDIS_URL: must be redis:\/\/host:port, a list/,
    );
  });

  it("takes a Redis Cluster or a Sentinel set as the server does", () => {
    const sentinel = "redis+sentinel://127.0.0.1:26379,127.0.0.1:26380/mymaster";
    expect(loadEnv("/repository", { REDIS_URL: sentinel }).redisUrl).toBe(sentinel);
    const cluster = "redis://127.0.0.1:7000,127.0.0.1:7001";
    expect(loadEnv("/repository", { REDIS_URL: cluster }).redisUrl).toBe(cluster);
  });
});
