// One vitest run for the whole workspace: every package is a project, and one service harness
// (Redis + a MongoDB-compatible server) is started for all of them.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    projects: ["packages/*", "apps/*"],
    globalSetup: ["packages/services/src/vitest-global-setup.ts"],
    reporters: ["default", "./packages/services/src/summary-reporter.ts"],
    pool: "forks",
    // Two cores: run files in parallel, but bounded.
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 120_000,
    teardownTimeout: 30_000,
  },
});
