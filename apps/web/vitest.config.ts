// The @gadget/web vitest project: component tests in jsdom; e2e/ files switch to node per file.
import { defineProject, mergeConfig } from "vitest/config";
import viteConfig from "./vite.config.ts";

export default mergeConfig(
  viteConfig,
  defineProject({
    test: {
      name: "@gadget/web",
      environment: "jsdom",
      setupFiles: ["./src/test/setup.ts"],
      include: ["src/**/*.test.{ts,tsx}", "e2e/**/*.test.ts"],
      // As at the root: e2e files build the app and start Chromium.
      testTimeout: 30_000,
      hookTimeout: 120_000,
    },
  }),
);
