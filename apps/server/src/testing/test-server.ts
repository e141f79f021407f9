// Starts server instances for tests on port 0, each test file with its own database and Redis prefix.
import { randomUUID } from "node:crypto";
import { databaseUrl } from "@gadget/services";
import type { ServerConfig } from "../config.ts";
import { createGadgetServer, type GadgetServer } from "../server.ts";

export interface TestServerOptions extends Partial<ServerConfig> {
  mongoUrl: string;
  redisUrl: string;
}

/** A unique name for a test file's database and Redis prefix. */
export function uniqueName(label: string): string {
  return `${label.replace(/[^a-z0-9]/gi, "_")}_${randomUUID().slice(0, 8)}`;
}

/**
 * Config with short timings so leases and sweeps play out in a second or two. Acks and the
 * drone's answers get 5 s: on a busy machine a drone's event loop can stall for seconds, and a
 * shorter wait turns that into a missed dispatch, not into what a test means to check.
 * @example const server = await createGadgetServer(testConfig({ mongoUrl, redisUrl }, "dispatch"));
 */
export function testConfig(options: TestServerOptions, name = uniqueName("test")): ServerConfig {
  return {
    port: 0,
    host: "127.0.0.1",
    secret: "test-secret-test-secret-test-secret-0123",
    redisPrefix: `t_${name}`,
    droneGraceMs: 1_500,
    sweepIntervalMs: 150,
    workOrderAckTimeoutMs: 5_000,
    droneRequestTimeoutMs: 5_000,
    turnUpdateIntervalMs: 50,
    // The old default cost: tests sign up hundreds of users (production hashes at N=2^17).
    passwordCost: { N: 2 ** 14, r: 8, p: 1 },
    ...options,
    mongoUrl: options.mongoUrl.includes("/test_")
      ? options.mongoUrl
      : databaseUrl(options.mongoUrl, `test_${name}`),
  };
}

/** Starts one instance for a test file. */
export async function startTestServer(
  options: TestServerOptions,
  name?: string,
): Promise<GadgetServer> {
  return createGadgetServer(testConfig(options, name));
}
