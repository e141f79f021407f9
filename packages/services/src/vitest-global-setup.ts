// Vitest global setup: one private Redis and MongoDB-compatible server for the whole test run,
// unless MONGO_URL / REDIS_URL are given. Tests read them with inject("mongoUrl") / inject("redisUrl").
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { findRepoRoot } from "./repo-root.ts";
import { startServices } from "./services.ts";

declare module "vitest" {
  export interface ProvidedContext {
    mongoUrl: string;
    redisUrl: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const dataDir = await mkdtemp(path.join(tmpdir(), "gadget-test-services-"));
  const services = await startServices({
    rootDir: findRepoRoot(),
    dataDir,
    mongoUrl: process.env.MONGO_URL,
    redisUrl: process.env.REDIS_URL,
    log: (line) => console.log(`[services] ${line}`),
  });
  console.log(
    `[services] ${services.mongoKind} at ${services.mongoUrl}, ${services.redisKind} at ${services.redisUrl}`,
  );
  project.provide("mongoUrl", services.mongoUrl);
  project.provide("redisUrl", services.redisUrl);

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await services.stop();
    await rm(dataDir, { recursive: true, force: true });
  };
  return stop;
}
