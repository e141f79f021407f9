// Vitest global setup: one private Redis and MongoDB-compatible server for the whole test run,
// unless MONGO_URL / REDIS_URL are given. Tests read them with inject("mongoUrl") / inject("redisUrl").
// At the end it checks that the run left the temp folder as it found it.
import { readdirSync } from "node:fs";
import { mkdtemp, readdir, rm } from "node:fs/promises";
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

/** Names our code gives what it puts in the temp folder. */
const ourPrefix = /^gadget-/;
/** What the harness of a test run makes (this one removes its own; others are other runs'). */
const harnessPrefix = /^gadget-test-(run|services)-/;

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const systemTemp = tmpdir();
  const foundAtStart = new Set(readdirSync(systemTemp));
  const dataDir = await mkdtemp(path.join(systemTemp, "gadget-test-services-"));
  // Every temporary file of the run (workspaces, remotes, drone homes) lands in one directory
  // removed at the end, so a run leaves the machine's temp folder as it found it. The test
  // workers are forked after this and inherit it.
  const runTemp = await mkdtemp(path.join(systemTemp, "gadget-test-run-"));
  process.env.TMPDIR = runTemp;
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
    // What tests made in the temp folder and did not remove (makeTempDir of @gadget/testkit, or
    // their own afterAll, should). Tools' caches there (tsx's) are not the tests'.
    const leftByTests = (await readdir(runTemp)).filter((name) => ourPrefix.test(name));
    await rm(dataDir, { recursive: true, force: true });
    await rm(runTemp, { recursive: true, force: true });
    // Made beside the run's folder, i.e. by something that does not honour TMPDIR. Other
    // processes share this folder, so only names our code gives count.
    const leftBeside = readdirSync(systemTemp).filter(
      (name) => !foundAtStart.has(name) && ourPrefix.test(name) && !harnessPrefix.test(name),
    );
    const problems = [
      ...leftByTests.map((name) => `  ${name} (in the run's temp folder; removed now)`),
      ...leftBeside.map((name) => `  ${path.join(systemTemp, name)}`),
    ];
    if (problems.length > 0) {
      // Vitest only logs an error thrown here, so the exit code says it.
      process.exitCode = 1;
      console.error(
        `\nFAILED: the tests left ${problems.length} entries in the temp folder; the test that ` +
          `makes each must remove it:\n${problems.join("\n")}`,
      );
    }
  };
  return stop;
}
