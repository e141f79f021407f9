// REDIS_URL's three forms: one Redis, a Redis Cluster's seed nodes, a Sentinel-watched master;
// anything else is refused at start with what the forms are.
import { describe, expect, it } from "vitest";
import { loadEnv } from "../env.ts";
import { parseRedisUrl } from "./redis-url.ts";

describe("parseRedisUrl", () => {
  it("reads one Redis as it is", () => {
    expect(parseRedisUrl("redis://:pw@cache.internal:6380/2")).toMatchObject({
      kind: "single",
      url: "redis://:pw@cache.internal:6380/2",
      password: "pw",
      tls: false,
    });
  });

  it("reads a list of hosts, or redis+cluster://, as a Redis Cluster's seed nodes", () => {
    expect(parseRedisUrl("rediss://app:s%40cret@10.0.0.1:7000,10.0.0.2:7001,[::1]")).toEqual({
      kind: "cluster",
      nodes: [
        { host: "10.0.0.1", port: 7000 },
        { host: "10.0.0.2", port: 7001 },
        { host: "::1", port: 6379 },
      ],
      username: "app",
      password: "s@cret",
      tls: true,
    });
    expect(parseRedisUrl("redis+cluster://127.0.0.1:7000")).toMatchObject({
      kind: "cluster",
      nodes: [{ host: "127.0.0.1", port: 7000 }],
    });
  });

  it("reads redis+sentinel:// as the named master its Sentinels watch", () => {
    expect(parseRedisUrl("redis+sentinel://s1:26380,s2/mymaster/3")).toEqual({
      kind: "sentinel",
      sentinels: [
        { host: "s1", port: 26380 },
        { host: "s2", port: 26379 },
      ],
      masterName: "mymaster",
      db: 3,
      username: undefined,
      password: undefined,
      tls: false,
    });
  });

  it.each([
    ["http://127.0.0.1:6379", /must be redis:\/\/host:port/],
    ["redis+sentinel://127.0.0.1:26379", /ends in \/mastername/],
    ["redis://a:7000,b:7001/1", /only database 0/],
    ["redis://a:7000,b:99999", /"b:99999" is not host:port/],
  ])("refuses %s", (url, message) => {
    expect(() => parseRedisUrl(url)).toThrow(message);
  });

  it("fails the server's start on a bad REDIS_URL without printing its password", () => {
    expect(() =>
      loadEnv({ GADGET_DATA_DIR: "/tmp", REDIS_URL: "redis+sentinel://:hunter2@s1" }),
    ).toThrow(/REDIS_URL: must be redis:\/\/host:port/);
    expect(() =>
      loadEnv({ GADGET_DATA_DIR: "/tmp", REDIS_URL: "redis+sentinel://:hunter2@s1" }),
    ).not.toThrow(/hunter2/);
  });

  it("asks for MONGO_URL beside a Cluster or Sentinel (private services pair with one Redis)", () => {
    const cluster = "redis://127.0.0.1:7000,127.0.0.1:7001";
    expect(() => loadEnv({ GADGET_DATA_DIR: "/tmp", REDIS_URL: cluster })).toThrow(
      /MONGO_URL: is required when REDIS_URL names a Redis Cluster or Sentinel/,
    );
    const env = loadEnv({
      GADGET_DATA_DIR: "/tmp",
      GADGET_SECRET: "x".repeat(32),
      REDIS_URL: cluster,
      MONGO_URL: "mongodb://127.0.0.1/gadget",
    });
    expect(env.redisUrl).toBe(cluster);
  });
});
